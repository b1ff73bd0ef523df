"""The self-play run: Ray actors generate games, the replay buffer keeps them, the learner trains.

    summary = run(cfg, resume=False, ray_address=None)   # a RunSummary (selfplay/messages.py)

The learner (learner/learner.py) trains in this (driver) process, or with `learner.placement: actor`
in a Ray actor with `learner.num_gpus` / `num_cpus` (a GPU node of the cluster); selfplay/learners.py
puts both behind one interface. It trains only while
    samples trained <= learner.train_ratio * positions generated
so it neither overfits a small buffer nor starves, publishes variables every `publish_every` steps.
This process checkpoints every `checkpoint_every` steps and on exit (Ctrl-C included) to
checkpoints/ (orbax: the full TrainState) and network/ (models/checkpoint.py: what arena/ loads, with
the search config it was trained with in its metadata), and writes TensorBoard scalars. The replay
buffer and parameter store run on this process's node, so every file of the run is written here. A
resumed run restores the learner checkpoint (params, optimizer, step, RNG, counters) and the replay
window from its chunk files; games in progress at the stop are not kept.

The loop repeats three steps over a `RunState` until a stop condition or Ctrl-C, then shuts down:
    collect   wait briefly for finished actor calls (and a finished training call); send each actor
              its next call (every actor has two queued, so it never waits for this loop)
    train     start training while the train ratio allows (a call trains in a thread or a Ray actor)
    report    progress / TensorBoard (GPU busy and memory, the achieved train ratio), sample games
              to games.pgn, stop conditions
    shutdown  finish a training call in flight, checkpoint, stop actors and replay -> RunSummary

On GPUs each JAX process takes a bounded share of its GPU's memory (selfplay/gpu.py, `gpu_memory`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Optional

import jax
import ray
import yaml

import games
import models
from actors.selfplay_actor import SelfPlayActor
from arena.play import append_pgn
from configs.loader import ConfigError, to_dict, upgrade
from learner.checkpoint import Checkpointer
from learner.train import TrainState, init_train_state
from models import checkpoint as network_checkpoint
from replay.buffer import ReplayBuffer
from replay.record import RecordError, SchemaError, decode
from runtime.cpus import pin_threads
from runtime.forking import forks_quietly
from runtime.signals import raise_if_stop_requested, stop_on_signals
from selfplay.config import SelfPlayConfig
from selfplay.errors import RunError
from selfplay.evaluator import EvaluatorHandle
from selfplay.gpu import GpuMonitor, local_gpu_count, out_of_memory_line, process_env, shares_line
from selfplay.learners import LearnerHandle, make_learner
from selfplay.messages import (
    EvalRequest,
    GpuFigures,
    LearnerFigures,
    PlayReport,
    ReplayStats,
    RunSummary,
    StopReason,
    TrainMetrics,
    TrainResult,
)
from selfplay.parameter_store import ParameterStore
from selfplay.progress import Progress

_ACTOR_MEMORY_FIX = ("lower actors.games_per_actor or search.num_simulations, or give each actor a larger "
                     "share (actors.num_gpus, gpu_memory, driver_gpu_share)")
_LEARNER_MEMORY_FIX = "lower learner.batch_size, or raise driver_gpu_share (or learner.num_gpus with placement=actor)"


_MUST_MATCH_ON_RESUME = ("game", "network")  # what the checkpoints and the replay were made with


def _first_difference(saved, now, key: str) -> str | None:
    """The first key where a saved config differs from today's ("network.resnet.filters: 32 -> 64");
    keys only one side has are not differences (a newer code's field with its default)."""
    if isinstance(saved, dict) and isinstance(now, dict):
        for k in saved:
            if k in now:
                found = _first_difference(saved[k], now[k], f"{key}.{k}")
                if found:
                    return found
        return None
    return None if saved == now else f"{key} is {saved!r} in the run, {now!r} now"


def _check_resumable(run_dir: Path, cfg: SelfPlayConfig) -> None:
    """On --resume: the run's config.yaml parses and names the same game and network as `cfg` (read as
    today's fields name them: a retired option set in the run is one line)."""
    path = run_dir / "config.yaml"
    try:
        saved = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise RunError(f"{path} is not valid YAML ({' '.join(str(e).split())[:120]}); "
                       "repair it or start a new run with another name") from None
    try:
        saved = upgrade(SelfPlayConfig, saved if isinstance(saved, dict) else {})
    except ConfigError as e:
        raise RunError(f"{path}: {e}") from None
    now = yaml.safe_load(yaml.safe_dump(to_dict(cfg), sort_keys=False))  # tuples as the file has them
    for key in _MUST_MATCH_ON_RESUME:
        found = _first_difference((saved or {}).get(key), now[key], key)
        if found:
            raise RunError(f"config mismatch on --resume: {found} ({path}); the run's checkpoints and games "
                           "were made with it: drop that --set, or start a new run with another name")


def start_error_line(e: BaseException) -> str | None:
    """One line for an error a user can cause or meet on start (a damaged or missing file, a full
    disk), with the fix; None for anything else (a bug: let it raise)."""
    import errno
    if isinstance(e, SchemaError):  # written by newer code: not damage
        return f"{e}; continue this run with the code that wrote it"
    if isinstance(e, RecordError):
        return str(e) if "replay.strict" in str(e) else f"{e}; move that file out of the replay directory"
    if isinstance(e, OSError) and e.errno == errno.ENOSPC:
        return f"no space left on the device ({e.filename or e}): free some, or set runs_dir to another disk"
    if isinstance(e, OSError):
        return f"{e}: check that path (permissions, a file where a directory belongs) or set runs_dir elsewhere"
    if isinstance(e, ValueError):  # replay/pruned.json unreadable
        return f"{e}; restore it, or move the replay directory away (its games are then not reloaded)"
    return None


def _actor_records(handles, timeout: float = 5.0) -> list[dict]:
    """The GCS record of each Ray actor ({"State": "ALIVE" | "RESTARTING" | "DEAD", "NumRestarts": n,
    ...}; {} if unknown): the view ray.get_runtime_context() itself reads, no dashboard needed.
    Asked from a daemon thread: TimeoutError after `timeout` s (after Ctrl-C the GCS may be gone)."""
    import queue

    from ray._private import state
    answer: queue.Queue = queue.Queue()

    def ask():
        try:
            answer.put([state.actors(actor_id=h._actor_id.hex()) or {} for h in handles])
        except Exception as e:
            answer.put(e)
    threading.Thread(target=ask, daemon=True).start()
    try:
        records = answer.get(timeout=timeout)
    except queue.Empty:
        raise TimeoutError("no answer from Ray's GCS") from None
    if isinstance(records, Exception):
        raise records
    return records


def _reload_replay(replay, run_dir: Path) -> ReplayStats:
    """Has the replay actor read its directory: a start error is a RunError line; damaged games set
    aside are one line on stderr."""
    try:
        stats = ray.get(replay.reload.remote())
    except ray.exceptions.RayTaskError as e:
        line = start_error_line(e.cause)
        if line is None:
            raise
        raise RunError(f"replay: {line}") from None
    if stats.games_quarantined:
        print(f"replay: {stats.games_quarantined} damaged game(s) set aside: their chunk files moved to "
              f"{run_dir / 'replay' / 'quarantine'}/, the intact games kept (--set replay.strict=true stops instead)",
              file=sys.stderr)
    return stats


def run_dir_of(cfg: SelfPlayConfig) -> Path:
    return Path(cfg.runs_dir) / cfg.name


def _prepare_run_dir(cfg: SelfPlayConfig, resume: bool) -> Path:
    run_dir = run_dir_of(cfg)
    started = (run_dir / "config.yaml").exists()
    if started and not resume:
        raise RunError(f"{run_dir} already holds a run: pass --resume to continue it or choose another name")
    if resume and not started:
        raise RunError(f"nothing to resume in {run_dir} (no config.yaml)")
    if resume:
        _check_resumable(run_dir, cfg)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False))
    return run_dir


def _error_line(error: BaseException) -> str:
    """The last 'SomeError: message' line of an exception's text (Ray's carry the remote traceback), or ""."""
    lines = [line.strip() for line in str(error).splitlines() if "Error: " in line or "Error(" in line]
    return lines[-1][:200] if lines else ""


def _check_local_gpus(cfg: SelfPlayConfig) -> None:
    """A local run whose actors ask for more GPUs than this machine has would wait forever: one line."""
    wanted = {"actors.num_gpus": cfg.actors.num_gpus * cfg.actors.num_actors,
              "learner.num_gpus": cfg.learner.num_gpus if cfg.learner.placement == "actor" else 0.0,
              "evaluation.num_gpus": cfg.evaluation.num_gpus if cfg.evaluation.enabled else 0.0}
    have = local_gpu_count()
    if sum(wanted.values()) > have + 1e-9:
        asked = ", ".join(f"{k}={v:g}" for k, v in wanted.items() if v)
        raise RunError(f"the run asks for {sum(wanted.values()):g} GPU(s) ({asked}) and this machine has {have:g}: "
                       "run it on a GPU machine, or set actors.num_gpus=0 (and those others to 0) to play on the CPU")


@contextlib.contextmanager
def _quiet_loggers(levels: dict[str, int]):
    """Logger name -> the lowest level it emits while the block runs (never lower than it had)."""
    saved = {name: logging.getLogger(name).level for name in levels}
    for name, level in levels.items():
        logging.getLogger(name).setLevel(max(saved[name], level))
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def _init_ray(cfg: SelfPlayConfig, address: str | None) -> bool:
    """Connects to `address` or starts a small local Ray; returns whether we started it."""
    if ray.is_initialized():
        return False
    with forks_quietly():
        if address:
            ray.init(address=address, log_to_driver=True)
        else:  # "local": a new instance even where `ray start` (or a test's Cluster) left a current cluster
            # Ray's notices at every start: "Started a local Ray instance", and that a local instance
            # uses token authentication (its default)
            with _quiet_loggers({"ray._private.worker": logging.WARNING,
                                 "ray._private.authentication.authentication_token_setup": logging.ERROR}):
                ray.init(address="local", num_cpus=cfg.ray_num_cpus, include_dashboard=False, log_to_driver=True,
                         object_store_memory=cfg.ray_object_store_mb * 1024 * 1024)
    stop_on_signals()  # after ray.init, whose own handler exits at once
    return True


def _append_pgn(run_dir: Path, frame: bytes) -> None:
    """Appends one finished chess game to games.pgn (python-chess via games/chess_bridge)."""
    from games import chess_bridge

    record = decode(frame)
    white_reward = record.rewards[int(record.to_play[0])] if record.plies else 0.0  # white moves first
    result = "1-0" if white_reward > 0 else "0-1" if white_reward < 0 else "1/2-1/2"
    game = chess_bridge.actions_to_pgn(
        record.actions.tolist(), result=result,
        headers={"Event": "zerochess self-play", "Round": record.game_id, "Termination": record.termination,
                 "White": f"zerochess v{record.param_versions[0]}", "Black": f"zerochess v{record.param_versions[1]}"})
    append_pgn(run_dir / "games.pgn", game)


def _variables(state: TrainState) -> dict:
    return jax.device_get({"params": state.params, "batch_stats": state.batch_stats})


def actor_names(cfg: SelfPlayConfig) -> dict[str, str]:
    """Ray names of this session's parameter store and replay buffer: unique on a shared cluster
    (run name, driver pid, the time of the call) and looked up by the actors that use them."""
    session = f"{cfg.name}-{os.getpid()}-{time.time_ns()}"
    return {"store": f"zerochess-store-{session}", "replay": f"zerochess-replay-{session}"}


def _on_this_node() -> dict:
    """Ray options pinning an actor to the driver's node (its files land in this run directory)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    node = ray.get_runtime_context().get_node_id()
    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_id=node, soft=False)}


def initial_state(cfg: SelfPlayConfig, game, net, warm_start: bool = True) -> TrainState:
    """The learner state of a fresh run: random weights from `seed`, or `init.network`'s weights
    (warm start) with a fresh optimiser at step 0. These are the first parameters published.
    `warm_start=False` (a resume, whose checkpoint replaces them) skips reading init.network."""
    obs0 = game.observe(game.init(jax.random.split(jax.random.PRNGKey(cfg.seed), 1)))
    variables = _init_variables(cfg) if cfg.init.network and warm_start else None
    return init_train_state(net, cfg.learner, obs0, jax.random.PRNGKey(cfg.seed), variables)


def _init_variables(cfg: SelfPlayConfig) -> dict:
    where = f"init.network {cfg.init.network}"
    try:
        ckpt = network_checkpoint.load(cfg.init.network)
    except (FileNotFoundError, ValueError) as e:
        raise RunError(f"{where}: {e}") from None
    if ckpt.game != cfg.game:
        raise RunError(f"{where} plays {ckpt.game or 'no pgx game'}, this run plays {cfg.game}: "
                       "warm-start from a network of this game")
    same = lambda a, b: (a.family, getattr(a, a.family), a.input_features) == (b.family, getattr(b, b.family),
                                                                               b.input_features)
    if not same(ckpt.config, cfg.network):
        raise RunError(f"{where} is a {_shape(ckpt.config)}, the run's network a {_shape(cfg.network)}: "
                       "set network.* as in its network.yaml, or warm-start a network of this shape")
    return {"params": ckpt.variables["params"], "batch_stats": ckpt.variables.get("batch_stats", {})}


def _shape(net: models.NetworkConfig) -> str:
    sub = to_dict(net).get(net.family, {})
    features = f" input_features={list(net.input_features)}" if net.input_features else ""
    return f"{net.family} " + " ".join(f"{k}={v}" for k, v in sub.items()) + features


def _opening_lines(cfg: SelfPlayConfig) -> tuple:
    """actors.opening_book's lines as pgx action arrays (selfplay/openings.py); () without a book."""
    if not cfg.actors.opening_book:
        return ()
    from selfplay.openings import book_lines
    try:
        return book_lines(cfg.actors.opening_book, cfg.game)
    except (OSError, ValueError) as e:
        raise RunError(str(e)) from None


def run(cfg: SelfPlayConfig, resume: bool = False, ray_address: str | None = None,
        show_progress: bool | None = None) -> RunSummary:
    """Runs self-play + training until max_steps / max_minutes / Ctrl-C; returns its summary."""
    if not ray_address:
        _check_local_gpus(cfg)
    opening_lines = _opening_lines(cfg)  # before the run directory: a bad book leaves nothing behind
    run_dir = _prepare_run_dir(cfg, resume)
    game = games.make(cfg.game)
    net = models.make_network(cfg.network, game.spec)
    state = initial_state(cfg, game, net, warm_start=not resume)
    checkpointer = Checkpointer(run_dir / "checkpoints", cfg.learner.keep_checkpoints)
    meta = {"samples_trained": 0, "seconds_total": 0.0}
    restored = checkpointer.restore_latest(state) if resume else None
    if restored is not None:
        state, meta = restored
    started_ray = _init_ray(cfg, ray_address)
    if local_gpu_count():
        print(shares_line(cfg), file=sys.stderr, flush=True)
    progress = Progress(run_dir / "tb", cfg, show_progress)
    try:
        session = _Session(cfg, run_dir, game, jax.device_get(state), int(meta["samples_trained"]),
                           float(meta.get("seconds_total", 0.0)), checkpointer, progress, opening_lines)
        if cfg.pin_cpus and not ray_address:
            session.pin_cpus()
        elif cfg.pin_cpus:
            print("pin_cpus: ignored with --ray-address (a cluster places its actors itself)", file=sys.stderr)
        return session.run()
    finally:
        progress.close()
        checkpointer.close()
        if started_ray:
            ray.shutdown()


@dataclasses.dataclass
class RunState:
    """The counters of one session of a run: what the loop's steps read and update."""

    batch_size: int  # positions per learner step
    step: int  # learner steps taken in all (the last the learner reported)
    samples_base: int  # samples trained before this session (from the checkpoint)
    step_base: int  # the step this session started at
    games_total: int  # games in the replay directory
    positions_total: int  # positions of those games
    games_at_start: int  # games found on disk at the start
    next_pgn: int  # games_total at which the next sample game goes to games.pgn
    seconds_base: float = 0.0  # wall time of the run's earlier sessions
    started: float = dataclasses.field(default_factory=time.monotonic)  # monotonic time the loop began
    metrics: Optional[TrainMetrics] = None  # of the last training step
    steps_in_flight: int = 0  # steps of the training call started and not yet reported
    last_report: float = 0.0  # monotonic time of the last progress update
    actor_nodes: set[str] = dataclasses.field(default_factory=set)
    stop_reason: StopReason = "interrupted"
    actor_restarts: list[int] = dataclasses.field(default_factory=list)  # per self-play actor: Ray's restarts
    restarts_checked: float = 0.0  # monotonic time of the last look at them
    positions_at_start: int = 0  # positions_total when this session began
    learner_steps: int = 0  # steps this session's training calls took (the first call, which compiles, aside)
    learner_seconds: float = 0.0  # wall time of those calls
    learner_wait_seconds: float = 0.0  # of which the learner waited for replay batches
    warm: Optional[tuple[float, int, int]] = None  # (monotonic time, positions, step) one minute in (warm-up done)
    learner_calls: int = 0  # training calls finished this session
    stopped: Optional[float] = None  # monotonic time the loop ended (rates exclude the shutdown)

    def samples_trained(self, at_step: int | None = None) -> int:
        """Samples trained at `at_step` (default: the step reached). Exact from the step, even if
        Ctrl-C lands inside a step: those before this session plus batch_size per step since."""
        return self.samples_base + ((self.step if at_step is None else at_step) - self.step_base) * self.batch_size

    def hours(self) -> float:
        """Wall time of the run so far, all sessions."""
        return (self.seconds_base + time.monotonic() - self.started) / 3600

    def steps_allowed(self, train_ratio: float) -> int:
        """Learner steps the train ratio allows beyond those taken or in flight."""
        trained = self.samples_trained(self.step + self.steps_in_flight)
        return int((train_ratio * self.positions_total - trained) // self.batch_size)

    def train_ratio(self) -> float:
        """Samples trained per position generated, this session (the configured learner.train_ratio
        once the learner keeps up; 0 before any position)."""
        made = self.positions_total - self.positions_at_start
        return (self.step - self.step_base) * self.batch_size / made if made else 0.0

    def learner_figures(self) -> LearnerFigures:
        busy = self.learner_seconds
        return LearnerFigures(
            steps=self.learner_steps, samples_per_s_training=self.learner_steps * self.batch_size / busy if busy else 0.0,
            seconds_training=busy, seconds_waiting_for_batches=self.learner_wait_seconds,
            train_ratio=self.train_ratio())

    def played(self, report: PlayReport) -> None:
        self.games_total += report.games
        self.positions_total += sum(report.game_plies)
        self.actor_nodes.add(report.node)
        if self.warm is None and time.monotonic() - self.started >= 60:
            self.warm = (time.monotonic(), self.positions_total, self.step)

    def warm_positions_per_s(self) -> Optional[float]:
        """Positions/s since the first minute (compiles and warm-up), or None before it."""
        if self.warm is None:
            return None
        t, positions, _ = self.warm
        return (self.positions_total - positions) / max((self.stopped or time.monotonic()) - t, 1e-9)


def cpu_plan(cores: list[int], num_actors: int) -> tuple[list[int], int]:
    """SelfPlayConfig.pin_cpus's placement: (the core of each self-play actor, the driver's core).
    The driver (the learner) keeps the last core to itself; the actors share the others, in turn."""
    return [cores[i % (len(cores) - 1)] for i in range(num_actors)], cores[-1]


class _Session:
    """One session of a run: starts the Ray actors, loops collect / train / report, shuts down."""

    def __init__(self, cfg: SelfPlayConfig, run_dir: Path, game, state: TrainState, samples_trained: int,
                 seconds_total: float, checkpointer: Checkpointer, progress: Progress,
                 opening_lines: tuple = ()):
        self.cfg, self.run_dir, self.checkpointer, self.progress = cfg, run_dir, checkpointer, progress
        cpu_only = {"env_vars": process_env(0.0, cfg)}  # they import pgx, which would start a GPU backend
        # named: the actors Ray may restart find the store and the replay by name (`actor_names`)
        names = actor_names(cfg)
        self.store = ray.remote(ParameterStore).options(num_cpus=0, runtime_env=cpu_only, name=names["store"],
                                                        **_on_this_node()).remote(opening_lines)
        ray.get(self.store.publish.remote(int(state.step), _variables(state)))
        self.replay = ray.remote(ReplayBuffer).options(num_cpus=0, runtime_env=cpu_only, name=names["replay"],
                                                       **_on_this_node()).remote(
            str(run_dir / "replay"), cfg.replay, game.spec.num_actions, game.spec.max_legal_actions, reload=False)
        stats = _reload_replay(self.replay, run_dir)
        self.games_quarantined = stats.games_quarantined
        every = cfg.sample_game_every
        self.state = RunState(
            batch_size=cfg.learner.batch_size, step=int(state.step), samples_base=samples_trained,
            step_base=int(state.step), games_total=stats.games_total, positions_total=stats.positions_total,
            games_at_start=stats.games_total, positions_at_start=stats.positions_total, next_pgn=(stats.games_total // every + 1) * every,
            seconds_base=seconds_total)
        self.learner: LearnerHandle = make_learner(cfg, state, self.replay, self.store)
        actor_cls = ray.remote(SelfPlayActor)
        env = {"env_vars": process_env(cfg.actors.num_gpus, cfg)}
        self.actors = [actor_cls.options(num_cpus=cfg.actors.num_cpus, num_gpus=cfg.actors.num_gpus,
                                         max_restarts=cfg.actors.max_restarts, runtime_env=env,
                                         scheduling_strategy="SPREAD").remote(
                           i, cfg.game, cfg.network, cfg.search, cfg.actors, names["replay"], names["store"],
                           cfg.seed * 1000 + int(state.step) + i, None)
                       for i in range(cfg.actors.num_actors)]
        # two calls queued per actor: it starts the next as soon as one ends, without waiting for this loop
        self.plays = {a.play.remote(cfg.actors.plies_per_call): a for a in self.actors for _ in range(2)}
        self.gpus = GpuMonitor()
        self.gpu_figures: Optional[GpuFigures] = None  # taken when the loop stops
        self.value_collapse_reported = False
        self.final_variables = None  # the network saved at the stop
        self.evaluator = (EvaluatorHandle(cfg, run_dir, names["store"], _on_this_node())
                          if cfg.evaluation.enabled else None)
        if self.evaluator and self.evaluator.latest:
            progress.evaluated(self.evaluator.latest)

    def pin_cpus(self) -> None:
        """SelfPlayConfig.pin_cpus: actor i on core i mod (cores - 1), the driver on the last core (one
        line where it cannot be done; a restarted actor runs unpinned)."""
        cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        if len(cores) < 2:
            print(f"pin_cpus: {len(cores) or 'an unknown number of'} core(s) visible, nothing pinned",
                  file=sys.stderr)
            return
        actor_cores, driver_core = cpu_plan(cores, len(self.actors))
        pinned = ray.get([a.pin_cpus.remote([c]) for a, c in zip(self.actors, actor_cores)])
        if self.cfg.learner.placement == "driver":
            pinned.append(pin_threads([driver_core]))
        if not all(pinned):
            print("pin_cpus: this platform cannot pin threads (Linux only); the run goes on unpinned",
                  file=sys.stderr)

    def run(self) -> RunSummary:
        self.state.started = time.monotonic()
        try:
            while True:
                raise_if_stop_requested()  # a SIGTERM or Ctrl-C whose KeyboardInterrupt a gc callback swallowed
                self.collect()
                self.train()
                if self.report():
                    break
        except KeyboardInterrupt:
            self.state.stop_reason = "interrupted"
        except ray.exceptions.RayActorError as e:  # Ctrl-C reaches Ray's processes too, often first
            self.state.stop_reason = "interrupted"
            print(f"a Ray process of the run died ({type(e).__name__}): stopping with a checkpoint; "
                  "--resume continues", file=sys.stderr)
        finally:
            self.state.stopped = time.monotonic()
            self.gpu_figures = self._gpu_figures()  # the loop's GPUs (the shutdown's final evaluation aside)
            self.checkpoint_at_stop()
        return self.shutdown()

    # -- the loop's steps -------------------------------------------------------------------------
    def _can_train(self) -> bool:
        s = self.state
        return (s.positions_total >= self.cfg.replay.min_positions
                and s.steps_allowed(self.cfg.learner.train_ratio) > 0)

    def collect(self) -> None:
        """Waits (up to 0.2 s, not at all when training can start) for finished actor calls and a
        finished training call; counts the games and sends each actor back to play."""
        ready_to_train = self._can_train() and not self.learner.busy()
        # a learner training in a thread of this process has no ref to wait on: look again soon
        threaded = self.learner.busy() and not self.learner.in_flight()
        done, _ = ray.wait(list(self.plays) + self.learner.in_flight(), num_returns=1,
                           timeout=0 if ready_to_train else 0.005 if threaded else 0.2)
        for ref in done:
            actor = self.plays.pop(ref, None)
            if actor is None:
                continue  # the learner's call: taken by poll below
            try:
                report: PlayReport = ray.get(ref)
            except ray.exceptions.RayActorError as e:  # its process died (kill -9, OOM, node lost)
                self._actor_lost(actor, e)
                continue
            except ray.exceptions.RayTaskError as e:
                line = out_of_memory_line(e, f"self-play actor {self.actors.index(actor)}", _ACTOR_MEMORY_FIX)
                if line is None:
                    raise
                raise RunError(line) from None
            self.state.played(report)
            self.progress.games_finished(report)
            self.plays[actor.play.remote(self.cfg.actors.plies_per_call)] = actor
        try:
            result = self.learner.poll(done)
        except Exception as e:  # the learner's call failed: out of GPU memory is one line, anything else raises
            line = out_of_memory_line(getattr(e, "cause", None) or e, "the learner", _LEARNER_MEMORY_FIX)
            if line is None:
                raise
            raise RunError(line) from None
        self._trained(result)

    def _actor_lost(self, actor, error: BaseException) -> None:
        """A self-play actor's call failed because its process died: Ray restarts it (up to
        actors.max_restarts) and it is sent back to play; the games it finished are in replay
        (acknowledged before it reports), only its games in progress are lost. Past max_restarts
        the run goes on without it; the line says why it died where Ray knows (`error`)."""
        index = self.actors.index(actor)
        try:
            dead = _actor_records([actor])[0].get("State") == "DEAD"
        except Exception:  # no answer: assume Ray restarts it (a call to a dead actor fails at once)
            dead = False
        if not dead:
            self.plays[actor.play.remote(self.cfg.actors.plies_per_call)] = actor
            return
        if actor in self.plays.values():
            return  # its other queued call fails too: one line, then
        why = _error_line(error)
        print(f"self-play actor {index} died and will not be restarted (actors.max_restarts="
              f"{self.cfg.actors.max_restarts}): the run goes on without it{f' ({why})' if why else ''}",
              file=sys.stderr)
        if not self.plays:
            raise RunError(f"every self-play actor died more than actors.max_restarts times"
                           f"{f', the last with: {why}' if why else ''}; the Ray worker logs "
                           "(/tmp/ray/session_latest/logs) say more")

    def _count_restarts(self) -> None:
        """Ray's restart count of each self-play actor (its GCS record); one stderr line per restart seen."""
        s = self.state
        s.restarts_checked = time.monotonic()
        try:
            counts = [int(r.get("NumRestarts", 0)) for r in _actor_records(self.actors)]
        except Exception:  # best effort: a Ray internal, and after Ctrl-C Ray may be gone
            return
        seen = s.actor_restarts + [0] * (len(counts) - len(s.actor_restarts))
        for index, (n, before) in enumerate(zip(counts, seen)):
            if n > before:
                print(f"self-play actor {index} died and Ray restarted it ({n} restart(s)); its games in "
                      "progress were lost, the finished ones are in replay", file=sys.stderr)
        s.actor_restarts = [max(n, before) for n, before in zip(counts, seen)]

    def train(self) -> None:
        """Starts a training call while the ratio allows (and max_steps is not reached)."""
        if self.learner.busy() or not self._can_train():
            return
        s = self.state
        n = self.learner.steps_per_call(s.steps_allowed(self.cfg.learner.train_ratio))
        if self.cfg.learner.max_steps:
            n = max(0, min(n, self.cfg.learner.max_steps - s.step))
        if n:
            s.steps_in_flight = n
            self.learner.start(n)

    def report(self) -> bool:
        """Progress and TensorBoard, a sample game to games.pgn; returns whether the run should stop."""
        s, cfg = self.state, self.cfg
        now = time.monotonic()
        if now - s.last_report >= min(cfg.log_every_seconds, 1.0):
            s.last_report = now
            self.progress.update(s.step, s.metrics, ray.get(self.replay.stats.remote()), self.gpus.snapshot(),
                                 s.learner_figures())
        self.evaluate()
        if s.games_total >= s.next_pgn and cfg.game == "chess":
            s.next_pgn += cfg.sample_game_every
            _append_pgn(self.run_dir, ray.get(self.replay.recent_games.remote(1))[0])
        if now - s.restarts_checked >= 5.0:
            self._count_restarts()
        if cfg.learner.max_steps and s.step >= cfg.learner.max_steps:
            s.stop_reason = "max_steps"
            return True
        if cfg.max_minutes and now - s.started >= 60 * cfg.max_minutes:
            s.stop_reason = "max_minutes"
            return True
        return False

    def evaluate(self) -> None:
        """Takes a finished evaluation's report; asks for the next when one is due."""
        if self.evaluator is None:
            return
        report = self.evaluator.poll()
        if report is not None:
            self.progress.evaluated(report)
        if self.evaluator.due(self.state.step):
            self.evaluator.request(self._eval_request())

    def _eval_request(self, variables=None) -> EvalRequest:
        s = self.state
        return EvalRequest(step=s.step, hours=s.hours(), positions=s.positions_total, games=s.games_total,
                           loss=None if s.metrics is None else float(s.metrics.loss), variables=variables)

    def _trained(self, result: Optional[TrainResult]) -> None:
        """Counts a finished training call; checkpoints when it crossed a `checkpoint_every` step."""
        if result is None:
            return
        s, every = self.state, self.cfg.learner.checkpoint_every
        before = s.step
        s.step, s.metrics, s.steps_in_flight = result.step, result.metrics, 0
        s.learner_calls += 1
        self._check_value_head(result)
        if s.learner_calls > 1:  # the first call compiles the step: not the learner's rate
            s.learner_steps += result.steps
            s.learner_seconds += result.seconds
            s.learner_wait_seconds += result.batch_wait_seconds
        self.progress.trained(s.step, (s.step - before) * s.batch_size)
        if s.step // every > before // every:
            self.save()

    def _check_value_head(self, result: TrainResult) -> None:
        """One line, once, when the value head gives a whole batch the same value: it has stopped
        reading its input (a dead ReLU; the 1-channel AlphaZero head is prone to it), so the search
        runs on a constant and self-play stops improving. The run goes on."""
        spread = result.metrics.value_std
        if self.value_collapse_reported or spread is None or result.step < 200 or spread > 1e-4:
            return
        self.value_collapse_reported = True
        print(f"step {result.step}: the value head gives every position of a batch the same value (std "
              f"{spread:.1e}): it has collapsed and the search now runs on a constant. Restart from an earlier "
              "checkpoint or fresh with a lower learner.lr_values or network.resnet.value_channels=32 "
              "(docs/selfplay.md#one-gpu)", file=sys.stderr, flush=True)

    def save(self):
        """Checkpoints the train state (checkpoints/) and the network (network/, for arena/ and uci.py)."""
        try:
            host_state = self.learner.train_state()
        except ray.exceptions.RayError as e:  # a learner actor lost (node down, Ctrl-C on local Ray)
            print(f"learner actor unreachable ({type(e).__name__}); the last checkpoint stands",
                  file=sys.stderr)
            return None
        s, cfg = self.state, self.cfg
        s.step = int(host_state.step)
        self.checkpointer.save(host_state, {"samples_trained": s.samples_trained(), "games_total": s.games_total,
                                            "positions_total": s.positions_total,
                                            "seconds_total": s.hours() * 3600})
        variables = _variables(host_state)
        network_checkpoint.save(self.run_dir / "network", cfg.network, variables, game=cfg.game,
                                metadata={"step": s.step, "run": cfg.name, "search": to_dict(cfg.search)})
        return variables

    # -- stopping ---------------------------------------------------------------------------------
    def checkpoint_at_stop(self) -> None:
        """Counts a training call in flight, then saves the step reached."""
        if self.learner.busy():
            try:
                self._trained(self.learner.wait())
            except ray.exceptions.RayError:
                pass  # save() reports it
        self.final_variables = self.save()
        self.progress.update(self.state.step, self.state.metrics, None, (), self.state.learner_figures())

    def finish_evaluation(self) -> None:
        """With the actors stopped: the evaluation in flight, then the final network's (`at_end`)."""
        if self.evaluator is None:
            return
        try:
            if self.final_variables is not None:
                for report in self.evaluator.finish(self._eval_request(self.final_variables)):
                    self.progress.evaluated(report)
        except (ray.exceptions.RayError, KeyboardInterrupt) as e:
            print(f"final evaluation skipped ({type(e).__name__})", file=sys.stderr)
        finally:
            self.evaluator.close()

    def shutdown(self) -> RunSummary:
        """Final replay totals, the corpus if asked, actors and replay stopped; the run's summary."""
        s = self.state
        location, games_total, positions_total = None, s.games_total, s.positions_total
        try:  # after Ctrl-C the local Ray processes may be gone already; the checkpoint is saved
            self._count_restarts()
            location = self.learner.location()
            # closed first: a game an actor finishes meanwhile is refused, not counted after the totals
            final = ray.get(self.replay.close.remote(), timeout=60)
            games_total, positions_total = final.games_total, final.positions_total
            if self.cfg.freeze_corpus_on_exit:
                ray.get(self.replay.freeze.remote(str(self.run_dir / "corpus")))
            for a in self.actors:
                ray.kill(a)
            self.finish_evaluation()
            self.learner.close()
        except (ray.exceptions.RayError, KeyboardInterrupt):
            pass
        return RunSummary(
            stop_reason=s.stop_reason, step=s.step, start_step=s.step_base, samples_trained=s.samples_trained(),
            games_total=games_total, positions_total=positions_total,
            games_this_session=games_total - s.games_at_start, reloaded_games=s.games_at_start,
            games_quarantined=self.games_quarantined, actor_restarts=sum(s.actor_restarts),
            metrics=s.metrics, learner=location, seconds=time.monotonic() - s.started,
            actor_nodes=tuple(sorted(n for n in s.actor_nodes if n)),
            evaluation=self.evaluator.latest if self.evaluator else None,
            positions_per_s=(s.positions_total - s.positions_at_start) / max((s.stopped or time.monotonic()) - s.started, 1e-9),
            positions_per_s_after_first_minute=s.warm_positions_per_s(), learner_figures=s.learner_figures(),
            gpus=self.gpu_figures)

    def _gpu_figures(self) -> Optional[GpuFigures]:
        """The GPUs over this session's loop (busy % also after its first minute, when the run is warm);
        None without NVML. Stops the monitor."""
        monitor, self.gpus = self.gpus, None
        if monitor is None or not monitor.available:
            return None
        monitor.close()
        warm = monitor.mean_busy(since=self.state.started + 60)
        last = monitor.snapshot()
        return GpuFigures(names=tuple(g.name for g in last), busy_mean=monitor.mean_busy(self.state.started),
                          busy_mean_after_first_minute=warm, memory_peak_gb=monitor.peak_memory_gb(),
                          memory_total_gb=max((g.memory_total_gb for g in last), default=0.0))
