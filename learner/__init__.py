"""The learner: the training step, the `Learner` (a Ray actor or in-process) and its orbax checkpoints.

It knows networks and the train step, not actors, replay or the run (selfplay/ orchestrates those).
"""
from learner.config import LearnerConfig
from learner.messages import LearnerLocation, TrainMetrics, TrainResult

__all__ = ["LearnerConfig", "LearnerLocation", "TrainMetrics", "TrainResult"]
