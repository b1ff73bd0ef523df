"""The self-play run: Ray actors generate games, the replay buffer keeps them, the learner trains.

    summary = run(cfg, resume=False, ray_address=None)   # a RunSummary (selfplay/messages.py)

The learner (learner/learner.py) trains in this (driver) process, or with `learner.placement: actor`
in a Ray actor with `learner.num_gpus` / `num_cpus` (a GPU node of the cluster); selfplay/learners.py
puts both behind one interface. It trains only while
    samples trained <= learner.train_ratio * positions generated
so it neither overfits a small buffer nor starves, publishes variables every `publish_every` steps.
This process checkpoints every `checkpoint_every` steps and on exit (Ctrl-C included) to
checkpoints/ (orbax: the full TrainState) and network/ (models/network_dir.py: what arena/ loads, with
the search config it was trained with in its metadata), and writes TensorBoard scalars. The replay
buffer and parameter store run on this process's node, so every file of the run is written here. A
resumed run restores the learner checkpoint (params, optimizer, step, RNG, counters) and the replay
window from its chunk files; games in progress at the stop are not kept.

`run` prepares (selfplay/prepare.py: the run directory, the first network, the opening book), starts
Ray (selfplay/cluster.py), then a `_Session` starts the parameter store, the replay buffer, the
learner and the actors and repeats three steps over a `RunState` (selfplay/state.py) until a stop
condition or Ctrl-C, then shuts down:
    collect   wait briefly for finished actor calls (and a finished training call); send each actor
              its next call (selfplay/actor_pool.py: two queued each, so it never waits for this loop)
    train     start training while the train ratio allows (a call trains in a thread or a Ray actor)
    report    progress / TensorBoard (selfplay/progress.py: GPU busy and memory, the achieved train
              ratio), sample games to games.pgn (selfplay/sample_games.py), stop conditions
    shutdown  finish a training call in flight, checkpoint, stop actors and replay -> RunSummary

On GPUs each JAX process takes a bounded share of its GPU's memory (runtime/gpu_memory.py, `gpu_memory`);
selfplay/gpu_monitor.py samples the GPUs' busy % and memory for the progress line and the summary.
"""
from __future__ import annotations

import sys
import time
from typing import Optional

import jax
import ray

import games
from configs import to_dict
from learner import TrainState
from models import network_dir
from replay import ReplayBuffer
from runtime import CPU_ONLY_ENV, out_of_memory_line, raise_if_stop_requested, stop_handled, stops_deferred
from selfplay import cluster, prepare
from selfplay.actor_pool import ActorPool
from selfplay.config import SelfPlayConfig
from selfplay.errors import RunError
from selfplay.evaluation import EvaluatorHandle
from selfplay.gpu_monitor import GpuMonitor
from selfplay.learners import LearnerHandle, make_learner
from selfplay.messages import EvalRequest, GpuFigures, ReplayStats, RunSummary, TrainResult
from selfplay.parameter_store import ParameterStore
from selfplay.progress import Progress
from selfplay.sample_games import append_sample_game
from selfplay.state import RunState, limit_reached

_LEARNER_MEMORY_FIX = "lower learner.batch_size, or raise driver_gpu_share (or learner.num_gpus with placement=actor)"


def run(cfg: SelfPlayConfig, resume: bool = False, ray_address: str | None = None,
        show_progress: bool | None = None) -> RunSummary:
    """Runs self-play + training until max_steps / max_minutes / Ctrl-C; returns its summary."""
    envs = prepare.check_gpus(cfg, local=not ray_address)
    game = games.make(cfg.game)
    inputs = prepare.read_inputs(cfg, game, resume)  # before the run directory: a bad input leaves nothing behind
    start = prepare.open_run(cfg, game, inputs, resume)
    with start.checkpointer:
        _refuse_finished(cfg, int(start.state.step), start.seconds_total / 60)
        started_ray = cluster.init_ray(cfg, ray_address)
        progress = Progress(start.run_dir / "tb", cfg, show_progress)
        try:
            session = _Session(cfg, start, game, inputs, envs, progress)
            if cfg.pin_cpus and not ray_address:
                cluster.pin_cpus(session.pool.actors, pin_driver=cfg.learner.placement == "driver")
            elif cfg.pin_cpus:
                print("pin_cpus: ignored with --ray-address (a cluster places its actors itself)", file=sys.stderr)
            return session.run()
        finally:
            progress.close()
            if started_ray:
                ray.shutdown()


def _refuse_finished(cfg: SelfPlayConfig, step: int, minutes: float) -> None:
    """A resumed run (at `step`, `minutes` of wall time in its earlier sessions) that already reached a
    limit (both count every session) stops here, in one line."""
    reason = limit_reached(step, minutes, cfg.learner.max_steps, cfg.max_minutes)
    if reason == "max_steps":
        raise RunError(f"run {cfg.name} already took its learner.max_steps={cfg.learner.max_steps} steps: "
                       f"raise it to continue, e.g. --resume --set learner.max_steps={2 * cfg.learner.max_steps}")
    if reason == "max_minutes":
        raise RunError(f"run {cfg.name} already ran its max_minutes={cfg.max_minutes:g} ({minutes:.1f} "
                       f"minutes, every session counted): raise it to continue, e.g. --resume --set "
                       f"max_minutes={2 * cfg.max_minutes:g}")


def _variables(state: TrainState) -> dict:
    return jax.device_get({"params": state.params, "batch_stats": state.batch_stats})


class _Session:
    """One session of a run: starts the Ray actors, loops collect / train / report, shuts down."""

    def __init__(self, cfg: SelfPlayConfig, start: prepare.Start, game, inputs: prepare.Inputs,
                 envs: prepare.ProcessEnvs, progress: Progress):
        self.cfg, self.run_dir, self.checkpointer, self.progress = cfg, start.run_dir, start.checkpointer, progress
        state = jax.device_get(start.state)
        # named: the actors Ray may restart find the store and the replay by name (`cluster.actor_names`)
        names = cluster.actor_names(cfg)
        stats = self._start_store_and_replay(names, game, state, inputs)
        self.games_quarantined = stats.games_quarantined
        self.state = RunState.at_start(cfg.learner.batch_size, int(state.step), start.samples_trained,
                                       start.seconds_total, stats, cfg.sample_game_every)
        self.learner: LearnerHandle = make_learner(cfg, state, self.replay, self.store, envs.learner,
                                                   inputs.init_variables)
        self.pool = ActorPool(cfg, names, int(state.step), envs.actor)  # the self-play actors, two calls queued each
        self.gpus = GpuMonitor()
        self.gpu_figures: Optional[GpuFigures] = None  # taken when the loop stops
        self.value_health = start.value_health  # the run's first value figures, its warning
        self.value_health.linear_path = cfg.network.value_reads_input
        self.final_variables = None  # the network saved at the stop
        self.evaluator = (EvaluatorHandle(cfg, self.run_dir, names["store"], cluster.on_this_node(), envs.evaluator)
                          if cfg.evaluation.enabled else None)
        if self.evaluator and self.evaluator.latest:
            progress.evaluated(self.evaluator.latest)

    def _start_store_and_replay(self, names: dict[str, str], game, state: TrainState,
                                inputs: prepare.Inputs) -> ReplayStats:
        """The parameter store (with the first network published) and the replay buffer, on this node;
        the replay's games reloaded from the run directory."""
        cfg, run_dir = self.cfg, self.run_dir
        cpu_only = {"env_vars": dict(CPU_ONLY_ENV)}  # the store and the replay hold no network
        self.store = ray.remote(ParameterStore).options(num_cpus=0, runtime_env=cpu_only, name=names["store"],
                                                        **cluster.on_this_node()).remote(inputs.opening_lines)
        ray.get(self.store.publish.remote(int(state.step), _variables(state)))
        self.replay = ray.remote(ReplayBuffer).options(num_cpus=0, runtime_env=cpu_only, name=names["replay"],
                                                       **cluster.on_this_node()).remote(
            str(run_dir / "replay"), cfg.replay, game.spec.num_actions, game.spec.max_legal_actions, reload=False)
        stats = prepare.reload_replay(self.replay, run_dir)
        if inputs.anchors is not None:
            ray.get(self.replay.set_anchor.remote(inputs.anchors))
        return stats

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
        finally:  # a signal caught above is acted on: the stop's checkpoint block must not raise it again
            stop_handled()
            self.state.stopped = time.monotonic()
            self.gpu_figures = self.gpus.figures(since=self.state.started)  # the loop's GPUs, monitor stopped
            self.checkpoint_at_stop()
        return self.shutdown()

    # -- collect ----------------------------------------------------------------------------------
    def collect(self) -> None:
        """Waits (up to 0.2 s, not at all when training can start) for finished actor calls and a
        finished training call; counts the games and sends each actor back to play."""
        ready_to_train = self._can_train() and not self.learner.busy()
        # a learner training in a thread of this process has no ref to wait on: look again soon
        threaded = self.learner.busy() and not self.learner.in_flight()
        done, _ = ray.wait(self.pool.calls() + self.learner.in_flight(), num_returns=1,
                           timeout=0 if ready_to_train else 0.005 if threaded else 0.2)
        for ref in done:
            report = self.pool.take(ref)  # None: the learner's call (taken by poll below) or a lost actor
            if report is not None:
                self.state.played(report)
                self.progress.games_finished(report)
        try:
            result = self.learner.poll(done)
        except Exception as e:  # the learner's call failed: out of GPU memory is one line, anything else raises
            line = out_of_memory_line(getattr(e, "cause", None) or e, "the learner", _LEARNER_MEMORY_FIX)
            if line is None:
                raise
            raise RunError(line) from None
        self._trained(result)

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
        """One line on stderr, once, when the value head is collapsing against the run's start
        (learner/health.py: its spread fell to a quarter of the first figure's, or its units stopped
        passing their ReLU): the search would run on a constant and self-play stop improving. The
        run goes on; the summary keeps the line (value_health.warning)."""
        line = self.value_health.observe(result.step, result.metrics)
        if line:
            print(line, file=sys.stderr, flush=True)

    def _count_restarts(self) -> None:
        """Ray's restart count of each self-play actor; one stderr line per restart seen."""
        s = self.state
        s.restarts_checked = time.monotonic()
        s.actor_restarts = self.pool.count_restarts(s.actor_restarts)

    # -- train ------------------------------------------------------------------------------------
    def _can_train(self) -> bool:
        s = self.state
        return (s.positions_total >= self.cfg.replay.min_positions
                and s.steps_allowed(self.cfg.learner.train_ratio) > 0)

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

    # -- report -----------------------------------------------------------------------------------
    def report(self) -> bool:
        """Progress and TensorBoard, a sample game to games.pgn; returns whether the run should stop."""
        s, cfg = self.state, self.cfg
        now = time.monotonic()
        if now - s.last_report >= min(cfg.log_every_seconds, 1.0):
            s.last_report = now
            self.progress.update(s.step, s.metrics, ray.get(self.replay.stats.remote()), self.gpus.snapshot(),
                                 s.learner_figures(), self.value_health.value_std_start)
        self.evaluate()
        if s.games_total >= s.next_pgn and cfg.game == "chess":
            s.next_pgn += cfg.sample_game_every
            append_sample_game(self.run_dir, ray.get(self.replay.recent_games.remote(1))[0])
        if now - s.restarts_checked >= 5.0:
            self._count_restarts()
        reason = s.limit_reached(cfg.learner.max_steps, cfg.max_minutes)
        if reason is not None:
            s.stop_reason = reason
        return reason is not None

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

    # -- checkpoints and stopping -----------------------------------------------------------------
    def save(self):
        """Checkpoints the train state (checkpoints/) and the network (network/, for arena/ and uci.py)."""
        try:
            host_state = self.learner.train_state()
        except ray.exceptions.RayError as e:  # a learner actor lost (node down, Ctrl-C on local Ray)
            print(f"learner actor unreachable ({type(e).__name__}); the last checkpoint stands", file=sys.stderr)
            return None
        s, cfg = self.state, self.cfg
        s.step = int(host_state.step)
        variables = _variables(host_state)
        with stops_deferred():  # the checkpoint and the network directory of one step, neither cut short
            self.checkpointer.save(host_state, {"samples_trained": s.samples_trained(), "games_total": s.games_total,
                                                "positions_total": s.positions_total,
                                                "seconds_total": s.hours() * 3600, **self.value_health.meta()})
            network_dir.save(self.run_dir / "network", cfg.network, variables, game=cfg.game,
                             metadata={"step": s.step, "run": cfg.name, "search": to_dict(cfg.search)})
        return variables

    def checkpoint_at_stop(self) -> None:
        """Counts a training call in flight, then saves the step reached."""
        if self.learner.busy():
            try:
                self._trained(self.learner.wait())
            except ray.exceptions.RayError:
                pass  # save() reports it
        self.final_variables = self.save()
        self.progress.update(self.state.step, self.state.metrics, None, (), self.state.learner_figures(),
                             self.value_health.value_std_start)

    def finish_evaluation(self) -> None:
        """With the actors stopped: the evaluation in flight, then the final network's (`at_end`); after
        a signal neither (the one in flight is dropped)."""
        if self.evaluator is None:
            return
        try:
            if self.state.stop_reason == "interrupted":  # Ctrl-C or SIGTERM: end within seconds
                self.evaluator.abandon()
            elif self.final_variables is not None:
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
            self.pool.kill()
            self.finish_evaluation()
            self.learner.close()
        except (ray.exceptions.RayError, KeyboardInterrupt):
            pass
        return RunSummary(
            stop_reason=s.stop_reason, step=s.step, start_step=s.step_base, samples_trained=s.samples_trained(),
            games_total=games_total, positions_total=positions_total, reloaded_games=s.games_at_start,
            games_this_session=games_total - s.games_at_start, games_quarantined=self.games_quarantined,
            actor_restarts=sum(s.actor_restarts), metrics=s.metrics, learner=location, seconds=time.monotonic() - s.started,
            actor_nodes=tuple(sorted(n for n in s.actor_nodes if n)), resign_threshold=self.progress.resign_threshold(),
            sparring_games=self.progress.partner_games, sparring_score=self.progress.partner_score(),
            positions_per_s=s.positions_per_s(), positions_per_s_after_first_minute=s.warm_positions_per_s(),
            plies_searched_per_s_after_first_minute=s.warm_plies_searched_per_s(), learner_figures=s.learner_figures(),
            gpus=self.gpu_figures, value_health=self.value_health.summary(s.metrics),
            evaluation=self.evaluator.latest if self.evaluator else None,
            learning=self.evaluator.learning.summary() if self.evaluator else None)
