"""What the learner reports to the run (selfplay/messages.py re-exports these)."""
from __future__ import annotations

import dataclasses
from typing import Mapping, Optional


@dataclasses.dataclass(frozen=True)
class TrainMetrics:
    """The last training step's figures (learner/train.py `loss_and_metrics` + the step's extras)."""

    loss: float  # the total loss
    policy_loss: float  # -pi . log p over the legal moves
    value_loss: float  # (z - v)^2
    policy_entropy: float  # entropy of p over the legal moves
    learning_rate: float  # the schedule's value at this step
    param_norm: float  # l2 norm of the parameters after the step
    value_std: Optional[float] = None  # std of v over the batch: ~0 when the value head ignores its input
    wdl_loss: Optional[float] = None  # WDL cross entropy (networks with a WDL head)

    @classmethod
    def of(cls, metrics: Mapping[str, float]) -> "TrainMetrics":
        """From the train step's metrics (host floats); an unknown or missing name is an error."""
        return cls(**{k: float(v) for k, v in metrics.items()})


@dataclasses.dataclass(frozen=True)
class TrainResult:
    """One `Learner.train(num_steps)` call."""

    step: int  # learner steps taken in all (the train state's step)
    metrics: TrainMetrics  # of the call's last step
    steps: int = 0  # steps this call trained
    seconds: float = 0.0  # wall time of the call
    batch_wait_seconds: float = 0.0  # of which waiting for replay batches (the rest: transfer and steps)


@dataclasses.dataclass(frozen=True)
class LearnerLocation:
    """Where training runs."""

    device: str  # the train state's devices, e.g. "cpu:0", "cuda:0", "cuda:0,cuda:1" (learner.devices=2)
    node: str  # Ray node id
    pid: int  # process id (the driver's own, or the learner actor's)
