"""The learner: the training step, the `Learner` (a Ray actor or in-process) and its orbax checkpoints.

It knows networks and the train step, not actors, replay or the run (selfplay/ orchestrates those).
Other rooms use the names below, never a module of learner; the names in _LAZY load JAX, optax,
orbax or Ray on first use, so reading the config or the messages stays light.
"""
import importlib

from learner.config import LearnerConfig
from learner.health import ValueHealthMonitor
from learner.messages import LearnerLocation, TrainMetrics, TrainResult, ValueHealth

_LAZY = {
    "TrainState": "learner.train", "init_train_state": "learner.train", "make_train_step": "learner.train",
    "legal_log_probs": "learner.train", "frozen_leaves": "learner.train",
    "data_parallel": "learner.parallel", "describe": "learner.parallel",
    "CheckpointError": "learner.checkpoint", "Checkpointer": "learner.checkpoint",
    "Learner": "learner.learner",
}

__all__ = ["CheckpointError", "Checkpointer", "Learner", "LearnerConfig", "LearnerLocation", "TrainMetrics",
           "TrainResult", "TrainState", "ValueHealth", "ValueHealthMonitor", "data_parallel", "describe",
           "frozen_leaves", "init_train_state", "legal_log_probs", "make_train_step"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
