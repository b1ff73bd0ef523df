"""The learner: training step, orbax checkpoints, parameter publication, and the self-play run driver."""
from learner.config import LearnerConfig

__all__ = ["LearnerConfig"]
