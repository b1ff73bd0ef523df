"""What the learner reports to the run (selfplay/messages.py re-exports these)."""
from __future__ import annotations

import dataclasses
import math
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
    start_kl: Optional[float] = None  # KL(start || policy) over the legal moves (learner.start_policy_weight > 0)
    start_value_gap: Optional[float] = None  # mean (v - v_start)^2 over the batch (learner.start_value_weight > 0)
    start_entropy_gap: Optional[float] = None  # mean H(p) - H(p_start) in nats, < 0: sharper (start_entropy_weight > 0)
    # Value health (docs/selfplay.md, "Value health"); None where the step cannot tell:
    value_active: Optional[float] = None  # share of the ResNet value head's units past their ReLU, less active layer (0: dead)
    value_explained: Optional[float] = None  # 1 - Var(z - v) / Var(z) over the batch (None: every z equal)
    # What the batch trained on (replay batches): its share of positions from games won by the rules,
    # resigned, capped at the ply limit, drawn by the rules, adjudicated by material (learner.train.ENDINGS) ...
    trained_won_by_rules: Optional[float] = None
    trained_resigned: Optional[float] = None
    trained_capped: Optional[float] = None
    trained_drawn_by_rules: Optional[float] = None
    trained_adjudicated: Optional[float] = None
    sample_age: Optional[float] = None  # ... and the mean learner steps since the network that played them

    @classmethod
    def of(cls, metrics: Mapping[str, float]) -> "TrainMetrics":
        """From the train step's metrics (host floats); an unknown or missing name is an error. A NaN
        (a figure the batch cannot give, e.g. explained variance when every z is equal) is None."""
        values = {k: float(v) for k, v in metrics.items()}
        return cls(**{k: None if math.isnan(v) else v for k, v in values.items()})


@dataclasses.dataclass(frozen=True)
class ValueHealth:
    """Whether the value head is alive and learning, relative to the run's start (learner/health.py)."""

    start_step: int  # the learner step of the run's first figures
    value_std_start: float  # value std then
    value_active_start: Optional[float]  # share of the value head's units past their ReLU then (ResNet)
    value_std: Optional[float]  # the last step's figures (TrainMetrics): value std ...
    value_std_vs_start: Optional[float]  # ... as a share of value_std_start
    value_active: Optional[float]
    value_explained: Optional[float]  # 1 - Var(z - v) / Var(z) over the last batch
    trained_won_by_rules: Optional[float]  # the last batch's share of positions from games won by the rules,
    trained_resigned: Optional[float]  # resigned,
    trained_capped: Optional[float]  # capped at the ply limit,
    trained_drawn_by_rules: Optional[float]  # drawn by the rules,
    trained_adjudicated: Optional[float]  # adjudicated by material (actors.adjudicate_plies)
    sample_age: Optional[float]  # mean learner steps since the network that played the last batch's positions
    warning: Optional[str] = None  # the "value head collapsing" line, if it was printed
    warning_step: Optional[int] = None  # the step it was printed at


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
