"""The run's side of the in-run evaluator: the Ray actor started beside the self-play actors (its
share of a GPU, a restart or three), an evaluation requested when one is due, one in flight at a
time, its report taken when it finishes; at the stop the final network's.

    evaluator = EvaluatorHandle(cfg, run_dir, store_name, placement, env)
    if evaluator.due(step): evaluator.request(EvalRequest(...))
    report = evaluator.poll()                     # an EvalReport when the one in flight finished
    reports = evaluator.finish(final_request)     # at the stop
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

from selfplay.config import SelfPlayConfig
from selfplay.errors import RunError
from selfplay.evaluation.evaluator import Evaluator
from selfplay.evaluation.learning import LearningCheck
from selfplay.messages import EvalReport, EvalRequest


class EvaluatorHandle:
    """The run's side of the evaluator actor: when an evaluation is due, one request in flight."""

    def __init__(self, cfg: SelfPlayConfig, run_dir: Path, store, placement: dict, env: dict[str, str]):
        """env: the evaluator's environment (prepare.ProcessEnvs.evaluator)."""
        import ray
        self.cfg = cfg.evaluation
        # evaluation.engines: checked before the run started (selfplay/prepare.py read_inputs)
        self.actor = ray.remote(Evaluator).options(
            num_cpus=self.cfg.num_cpus, num_gpus=self.cfg.num_gpus, max_restarts=3,
            runtime_env={"env_vars": env},
            **placement).remote(str(run_dir), cfg, store)
        try:
            done = ray.get(self.actor.evaluated_steps.remote(), timeout=300)
        except ray.exceptions.GetTimeoutError:
            raise RunError(
                f"the evaluator (evaluation.num_cpus={self.cfg.num_cpus}, num_gpus={self.cfg.num_gpus}) found no "
                "free Ray resources in 5 minutes: raise ray_num_cpus or set evaluation.num_cpus=0") from None
        self.latest: Optional[EvalReport] = ray.get(self.actor.latest.remote())
        self.learning = LearningCheck(ray.get(self.actor.first.remote()), self.cfg.learning_after_steps)
        self.last_step = done[-1] if done else None  # the step of the last request (or evaluation)
        self.last_time = time.monotonic()
        self._in_flight = None

    def due(self, step: int) -> bool:
        if self._in_flight is not None:
            return False
        if self.last_step is None:
            return self.cfg.at_start or step >= self.cfg.every_steps
        by_minutes = self.cfg.every_minutes and time.monotonic() - self.last_time >= 60 * self.cfg.every_minutes
        return step >= self.last_step + self.cfg.every_steps or bool(by_minutes)

    def request(self, request: EvalRequest) -> None:
        self._in_flight = self.actor.evaluate.remote(request)
        self.last_step, self.last_time = request.step, time.monotonic()

    def poll(self, timeout: float = 0.0) -> Optional[EvalReport]:
        """The report of the request in flight, if it finished (waits up to `timeout` seconds)."""
        import ray
        if self._in_flight is None or not ray.wait([self._in_flight], timeout=timeout)[0]:
            return None
        ref, self._in_flight = self._in_flight, None
        try:
            report = ray.get(ref)
        except ray.exceptions.RayTaskError as e:  # a bug or bad data in one evaluation: the run goes on
            print(f"evaluation at step {self.last_step} failed: {e.cause!r}", file=sys.stderr, flush=True)
            return None
        except ray.exceptions.RayActorError as e:  # its process died: Ray restarts it (max_restarts)
            print(f"the evaluator died during the evaluation at step {self.last_step} ({type(e).__name__}); "
                  "Ray restarts it and the next evaluation is at the next due step", file=sys.stderr, flush=True)
            return None
        if report is not None:
            self.latest = report
            line = self.learning.observe(report)
            if line:
                print(line, file=sys.stderr, flush=True)
        return report

    def finish(self, final: EvalRequest) -> list[EvalReport]:
        """At the stop: the evaluation in flight, then the final network's if `at_end` and new."""
        reports = []
        if self._in_flight is not None or self._final_due(final):  # minutes on a CPU: say why the run waits
            print(f"evaluating before the run ends (the network of step {final.step} is saved; Ctrl-C skips this)",
                  file=sys.stderr, flush=True)
        if self._in_flight is not None:
            report = self.poll(timeout=None)
            reports += [report] if report else []
        if self._final_due(final):  # asked again: the one in flight may have been the final step's
            self.request(final)
            report = self.poll(timeout=None)
            reports += [report] if report else []
        return reports

    def _final_due(self, final: EvalRequest) -> bool:
        return self.cfg.at_end and (self.latest is None or self.latest.step < final.step)

    def abandon(self) -> None:
        """At a stop by a signal: the evaluation in flight is dropped, not waited for (a run must end
        within a scheduler's grace period), and the actor busy with it killed by `close`; resuming
        evaluates the network it reaches when due."""
        if self._in_flight is not None:
            print(f"the evaluation of step {self.last_step} in flight was dropped (a signal stopped the run)",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        """Stops the actor: its engines first when it is idle (an actor busy with an evaluation would
        answer only after it: one abandoned or still in flight), else at once (its engines read EOF on
        stdin when it dies)."""
        import ray
        try:
            if self._in_flight is None:
                ray.get(self.actor.close.remote(), timeout=30)
        except ray.exceptions.RayError:
            pass  # already gone (Ctrl-C of the process group)
        finally:
            self._in_flight = None
            ray.kill(self.actor)
