"""The self-play run: Ray actors generate games, the replay buffer keeps them, the learner trains.

    summary = run(cfg, resume=False, ray_address=None)

The learner (learner/learner.py) trains in this (driver) process, or with `learner.placement: actor`
in a Ray actor with `learner.num_gpus` / `num_cpus` (a GPU node of the cluster). It trains only while
    samples trained <= learner.train_ratio * positions generated
so it neither overfits a small buffer nor starves, publishes variables every `publish_every` steps.
This process checkpoints every `checkpoint_every` steps and on exit (Ctrl-C included) to
checkpoints/ (orbax: the full TrainState) and network/ (models/checkpoint.py: what arena/ loads), and
writes TensorBoard scalars. The replay buffer and parameter store run on this process's node, so
every file of the run is written here. A resumed run restores the learner checkpoint (params,
optimizer, step, RNG, counters) and the replay window from its chunk files; games in progress at
the stop are not kept.
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import jax
import ray
import yaml

import games
import models
from models import checkpoint as network_checkpoint
from actors.selfplay_actor import SelfPlayActor
from configs.loader import to_dict
from learner.checkpoint import Checkpointer
from learner.learner import Learner
from learner.parameter_store import ParameterStore
from learner.progress import Progress
from learner.selfplay_config import SelfPlayConfig
from learner.train import TrainState, init_train_state
from replay.buffer import ReplayBuffer
from replay.record import decode


class RunError(RuntimeError):
    """A run that cannot start as asked (existing run without --resume, nothing to resume, ...)."""


def run_dir_of(cfg: SelfPlayConfig) -> Path:
    return Path(cfg.runs_dir) / cfg.name


def _prepare_run_dir(cfg: SelfPlayConfig, resume: bool) -> Path:
    run_dir = run_dir_of(cfg)
    started = (run_dir / "config.yaml").exists()
    if started and not resume:
        raise RunError(f"{run_dir} already holds a run: pass --resume to continue it or choose another name")
    if resume and not started:
        raise RunError(f"nothing to resume in {run_dir} (no config.yaml)")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False))
    return run_dir


def _init_ray(cfg: SelfPlayConfig, address: str | None) -> bool:
    """Connects to `address` or starts a small local Ray; returns whether we started it."""
    if ray.is_initialized():
        return False
    if address:
        ray.init(address=address, log_to_driver=True)
    else:
        ray.init(num_cpus=cfg.ray_num_cpus, include_dashboard=False, log_to_driver=True,
                 object_store_memory=cfg.ray_object_store_mb * 1024 * 1024)
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
    with open(run_dir / "games.pgn", "a") as f:
        print(game, file=f, end="\n\n")


def run(cfg: SelfPlayConfig, resume: bool = False, ray_address: str | None = None,
        show_progress: bool | None = None) -> dict:
    """Runs self-play + training until max_steps / max_minutes / Ctrl-C; returns a summary dict."""
    run_dir = _prepare_run_dir(cfg, resume)
    game = games.make(cfg.game)
    net = models.make_network(cfg.network, game.spec)
    obs0 = game.observe(game.init(jax.random.split(jax.random.PRNGKey(cfg.seed), 1)))
    state = init_train_state(net, cfg.learner, obs0, jax.random.PRNGKey(cfg.seed))
    checkpointer = Checkpointer(run_dir / "checkpoints", cfg.learner.keep_checkpoints)
    meta = {"samples_trained": 0, "games_at_start": 0}
    restored = checkpointer.restore_latest(state) if resume else None
    if restored is not None:
        state, meta = restored
    started_ray = _init_ray(cfg, ray_address)
    progress = Progress(run_dir / "tb", cfg, show_progress)
    try:
        return _loop(cfg, run_dir, game, state, meta, checkpointer, progress)
    finally:
        progress.close()
        checkpointer.close()
        if started_ray:
            ray.shutdown()


def _variables(state: TrainState):
    return jax.device_get({"params": state.params, "batch_stats": state.batch_stats})


def _on_this_node() -> dict:
    """Ray options pinning an actor to the driver's node (its files land in this run directory)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    node = ray.get_runtime_context().get_node_id()
    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_id=node, soft=False)}


class _LearnerHandle:
    """One interface over a learner in this process or in a Ray actor.

    `start(n)` begins n training steps and returns a ref to wait on (None when trained in place:
    the result is then ready at once); `finish()` returns that result; `state()` the TrainState.
    """

    def __init__(self, cfg: SelfPlayConfig, state: TrainState, replay, store):
        self.remote = cfg.learner.placement == "actor"
        if self.remote:
            self._learner = ray.remote(Learner).options(
                num_cpus=cfg.learner.num_cpus, num_gpus=cfg.learner.num_gpus).remote(cfg, state, replay, store)
        else:
            self._learner = Learner(cfg, state, replay, store)
        self.ref = None  # the train call in flight (remote) or its result (in place)
        self._result = None

    def start(self, num_steps: int):
        if self.remote:
            self.ref = self._learner.train.remote(num_steps)
        else:
            self._result = self._learner.train(num_steps)
        return self.ref

    def busy(self) -> bool:
        return self.ref is not None or self._result is not None

    def finish(self) -> dict:
        result = ray.get(self.ref) if self.remote else self._result
        self.ref = self._result = None
        return result

    def state(self) -> TrainState:
        return ray.get(self._learner.train_state.remote()) if self.remote else self._learner.train_state()

    def where(self) -> dict:
        return ray.get(self._learner.where.remote()) if self.remote else self._learner.where()

    def kill(self) -> None:
        if self.remote:
            ray.kill(self._learner)


def _loop(cfg, run_dir, game, state, meta, checkpointer, progress) -> dict:
    store = ray.remote(ParameterStore).options(num_cpus=0, **_on_this_node()).remote()
    ray.get(store.publish.remote(int(state.step), _variables(state)))
    replay = ray.remote(ReplayBuffer).options(num_cpus=0, **_on_this_node()).remote(
        str(run_dir / "replay"), cfg.replay, game.spec.num_actions, game.spec.max_legal_actions)
    stats = ray.get(replay.stats.remote())
    positions_total, games_total = stats["positions_total"], stats["games_total"]
    games_at_start = games_total
    B = cfg.learner.batch_size
    learner = _LearnerHandle(cfg, jax.device_get(state), replay, store)
    actor_cls = ray.remote(SelfPlayActor)
    actors = [actor_cls.options(num_cpus=cfg.actors.num_cpus, num_gpus=cfg.actors.num_gpus,
                                scheduling_strategy="SPREAD").remote(
                  i, cfg.game, cfg.network, cfg.search, cfg.actors, replay, store,
                  cfg.seed * 1000 + int(state.step) + i)
              for i in range(cfg.actors.num_actors)]
    plays = {a.play.remote(cfg.actors.plies_per_call): a for a in actors}
    # Samples trained follow from the step (exact even if Ctrl-C lands inside a step): those before
    # this session, plus B per step since, plus the steps of a remote call in flight.
    samples_base, step_base = int(meta.get("samples_trained", 0)), int(state.step)
    samples_of = lambda at_step: samples_base + (at_step - step_base) * B
    in_flight = 0
    start = time.monotonic()
    step, metrics, last_log = int(state.step), {}, 0.0
    next_pgn = (games_total // cfg.sample_game_every + 1) * cfg.sample_game_every
    stop_reason = "interrupted"
    nodes = set()

    def save():
        nonlocal step
        try:
            host_state = learner.state()
        except ray.exceptions.RayError as e:  # a learner actor lost (node down, Ctrl-C on local Ray)
            print(f"learner actor unreachable ({type(e).__name__}); the last checkpoint stands",
                  file=sys.stderr)
            return
        step = int(host_state.step)
        checkpointer.save(host_state, {"samples_trained": samples_of(step), "games_total": games_total,
                                       "positions_total": positions_total})
        # The network alone, for arena/ and uci.py (models/checkpoint.py format).
        network_checkpoint.save(run_dir / "network", cfg.network, _variables(host_state), game=cfg.game,
                                metadata={"step": step, "run": cfg.name})

    def finish_training():
        nonlocal step, metrics, in_flight
        before, result = step, learner.finish()
        in_flight = 0
        step, metrics = result["step"], result["metrics"]
        progress.trained(step, (step - before) * B)
        if step // cfg.learner.checkpoint_every > before // cfg.learner.checkpoint_every:
            save()

    try:
        while True:
            # 1. collect finished actor calls (and a finished remote training call); restart actors
            samples_trained = samples_of(step + in_flight)
            steps_allowed = int((cfg.learner.train_ratio * positions_total - samples_trained) // B)
            can_train = positions_total >= cfg.replay.min_positions and steps_allowed > 0
            waiting = list(plays) + ([learner.ref] if learner.ref is not None else [])
            ready_now = can_train and not learner.busy()
            done, _ = ray.wait(waiting, num_returns=1, timeout=0 if ready_now else 0.2)
            for ref in done:
                if ref == learner.ref:
                    finish_training()
                    continue
                actor = plays.pop(ref)
                result = ray.get(ref)
                games_total += result["games"]
                positions_total += sum(result["game_plies"])
                nodes.add(result.get("node", ""))
                progress.games_finished(result)
                plays[actor.play.remote(cfg.actors.plies_per_call)] = actor
            # 2. train while the ratio allows: one step at a time in place (actors keep being served),
            #    up to publish_every steps per call in a learner actor (which trains alongside)
            if can_train and not learner.busy():
                n = 1 if not learner.remote else max(1, min(steps_allowed, cfg.learner.publish_every))
                if cfg.learner.max_steps:
                    n = max(0, min(n, cfg.learner.max_steps - step))
                if n:
                    in_flight = n
                    if learner.start(n) is None:
                        finish_training()
            # 3. logs, sample games, stop conditions
            now = time.monotonic()
            if now - last_log >= min(cfg.log_every_seconds, 1.0):
                last_log = now
                progress.update(step, metrics, ray.get(replay.stats.remote()))
            if games_total >= next_pgn and cfg.game == "chess":
                next_pgn += cfg.sample_game_every
                _append_pgn(run_dir, ray.get(replay.recent_games.remote(1))[0])
            if cfg.learner.max_steps and step >= cfg.learner.max_steps:
                stop_reason = "max_steps"
                break
            if cfg.max_minutes and now - start >= 60 * cfg.max_minutes:
                stop_reason = "max_minutes"
                break
    except KeyboardInterrupt:
        stop_reason = "interrupted"
    finally:
        if learner.busy():
            try:
                finish_training()  # a remote call in flight: count its steps before the final checkpoint
            except ray.exceptions.RayError:
                pass  # save() below reports it
        save()
        progress.update(step, metrics, None)
    learner_where = {}
    try:  # after Ctrl-C the local Ray processes may be gone already; the checkpoint is saved
        learner_where = learner.where()
        final = ray.get(replay.stats.remote(), timeout=60)
        if cfg.freeze_corpus_on_exit:
            ray.get(replay.freeze.remote(str(run_dir / "corpus")))
        ray.get(replay.close.remote(), timeout=60)
        for a in actors:
            ray.kill(a)
        learner.kill()
    except (ray.exceptions.RayError, KeyboardInterrupt):
        final = {"games_total": games_total, "positions_total": positions_total}
    return {
        "stop_reason": stop_reason, "step": step, "samples_trained": samples_of(step),
        "games_total": final["games_total"], "positions_total": final["positions_total"],
        "games_this_session": final["games_total"] - games_at_start,
        "reloaded_games": games_at_start, "metrics": metrics, "learner": learner_where,
        "seconds": time.monotonic() - start, "actor_nodes": sorted(n for n in nodes if n),
    }
