"""The run's learner, in this process or in a Ray actor, behind one interface.

    learner = make_learner(cfg, state, replay, store, env, start)   # LocalLearner or RemoteLearner (learner.placement)
    n = learner.steps_per_call(steps_allowed)           # what one call should train
    learner.start(n)
    result = learner.poll(ready_refs)                    # TrainResult once the call has finished, else None

Both train up to `publish_every` steps per call alongside the run's loop: a local learner in a
thread of this process (JAX and Ray's calls release the GIL, so the loop keeps serving the actors),
a remote one in its Ray actor, whose call the run waits on with `in_flight()` beside the actors'.
"""
from __future__ import annotations

import threading
from typing import Collection, Optional, Protocol

import ray

from learner import Learner, LearnerLocation, TrainResult, TrainState
from selfplay.config import SelfPlayConfig


class LearnerHandle(Protocol):
    """One training call at a time: `start`, then `poll` until it returns the result."""

    def steps_per_call(self, steps_allowed: int) -> int:
        """Steps to train in the next call when the train ratio allows `steps_allowed` (>= 1) more."""

    def start(self, num_steps: int) -> None:
        """Begins a call of `num_steps` (>= 1) steps; only when not `busy()`."""

    def busy(self) -> bool:
        """A call started and its result not yet taken by `poll` / `wait`."""

    def in_flight(self) -> list:
        """Ray refs to wait on beside the actors' (the call in flight), or none."""

    def poll(self, ready: Collection) -> Optional[TrainResult]:
        """The started call's result if it has finished (`ready`: refs `ray.wait` returned), else None."""

    def wait(self) -> TrainResult:
        """The started call's result, waiting for it."""

    def train_state(self) -> TrainState:
        """The whole TrainState on this host (raises a RayError if a learner actor is lost)."""

    def location(self) -> LearnerLocation:
        """Where it trains."""

    def close(self) -> None:
        """Releases the learner (kills its actor)."""


class LocalLearner:
    """Trains in a thread of this process, up to `publish_every` steps per call."""

    def __init__(self, cfg: SelfPlayConfig, state: TrainState, replay, store, start: Optional[dict] = None):
        self._learner = Learner(cfg.game, cfg.network, cfg.learner, state, replay, store, start)
        self._max_steps = cfg.learner.publish_every
        self._thread: Optional[threading.Thread] = None
        self._outcome: list = []  # the call's TrainResult, or the exception it raised

    def steps_per_call(self, steps_allowed: int) -> int:
        return max(1, min(steps_allowed, self._max_steps))

    def start(self, num_steps: int) -> None:
        def call():
            try:
                self._outcome.append(self._learner.train(num_steps))
            except BaseException as e:  # re-raised in the run's thread by wait()
                self._outcome.append(e)
        self._outcome = []
        self._thread = threading.Thread(target=call, name="learner", daemon=True)
        self._thread.start()

    def busy(self) -> bool:
        return self._thread is not None

    def in_flight(self) -> list:
        return []

    def poll(self, ready: Collection) -> Optional[TrainResult]:
        if self._thread is None or self._thread.is_alive():
            return None
        return self.wait()

    def wait(self) -> TrainResult:
        thread, self._thread = self._thread, None
        thread.join()
        outcome = self._outcome.pop()
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def train_state(self) -> TrainState:
        if self._thread is not None:  # never read the state while a step may donate it
            raise RuntimeError("the learner is training: wait() for its call first")
        return self._learner.train_state()

    def location(self) -> LearnerLocation:
        return self._learner.location()

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join()


class RemoteLearner:
    """Trains in a Ray actor (`learner.num_gpus` / `num_cpus`), up to `publish_every` steps per call."""

    def __init__(self, cfg: SelfPlayConfig, state: TrainState, replay, store, env: dict[str, str],
                 start: Optional[dict] = None):
        self._max_steps = cfg.learner.publish_every
        self._actor = ray.remote(Learner).options(
            num_cpus=cfg.learner.num_cpus, num_gpus=cfg.learner.num_gpus,
            runtime_env={"env_vars": env},
        ).remote(cfg.game, cfg.network, cfg.learner, state, replay, store, start)
        self._ref = None  # the train call in flight

    def steps_per_call(self, steps_allowed: int) -> int:
        return max(1, min(steps_allowed, self._max_steps))

    def start(self, num_steps: int) -> None:
        self._ref = self._actor.train.remote(num_steps)

    def busy(self) -> bool:
        return self._ref is not None

    def in_flight(self) -> list:
        return [self._ref] if self._ref is not None else []

    def poll(self, ready: Collection) -> Optional[TrainResult]:
        if self._ref is None or self._ref not in ready:
            return None
        return self.wait()

    def wait(self) -> TrainResult:
        ref, self._ref = self._ref, None
        return ray.get(ref)

    def train_state(self) -> TrainState:
        return ray.get(self._actor.train_state.remote())

    def location(self) -> LearnerLocation:
        return ray.get(self._actor.location.remote())

    def close(self) -> None:
        ray.kill(self._actor)


def make_learner(cfg: SelfPlayConfig, state: TrainState, replay, store, env: dict[str, str],
                 start: Optional[dict] = None) -> LearnerHandle:
    """The learner `cfg.learner.placement` asks for ("driver": this process, "actor": a Ray actor, whose
    environment is `env`, prepare.ProcessEnvs.learner). `start`: init.network's variables, for
    learner.start_policy_weight / start_value_weight / start_entropy_weight."""
    if cfg.learner.placement == "actor":
        return RemoteLearner(cfg, state, replay, store, env, start)
    return LocalLearner(cfg, state, replay, store, start)
