"""Value health: is the value head alive and learning, relative to the run's own start?

    monitor = ValueHealthMonitor.from_meta(checkpoint_meta)   # the run's first figures, kept over resumes
    line = monitor.observe(result.step, result.metrics)       # a training call's last step's metrics
    if line: print(line, file=sys.stderr)                      # once, the first time it collapses
    meta.update(monitor.meta())                                # into the checkpoint
    summary = monitor.summary(metrics)                         # ValueHealth, for the RunSummary

The first figures the learner reports (its first training call's last step) are the run's start;
`value_head_collapsing` compares later figures with them (docs/selfplay.md, "Value health").
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Optional

from learner.messages import TrainMetrics, ValueHealth

MIN_STEPS = 200  # learner steps past the first figures before the warning may fire
STD_RATIO = 0.25  # value std below this share of its first figure: collapsing
EXPLAINED_FLOOR = 0.05  # ... while it explains less than this share of the outcomes' variance,
ACTIVE_FLOOR = 0.01  # or at most this share of the value head's units past their ReLU,
STD_FLOOR = 1e-3  # or a spread this narrow over a batch whose outcomes differ, whatever the start
CHECK = ("check learner.q_ratio, learner.lr_values (or learner.lr_warmup_steps), network.resnet.value_channels, "
         "the replay's outcome mix (docs/selfplay.md#value-health)")


def value_head_collapsing(steps_since_start: int, value_std: float, value_std_start: float,
                          value_active: Optional[float] = None, value_explained: Optional[float] = None, *,
                          min_steps: int = MIN_STEPS, std_ratio: float = STD_RATIO,
                          explained_floor: float = EXPLAINED_FLOOR, active_floor: float = ACTIVE_FLOOR,
                          std_floor: float = STD_FLOOR) -> bool:
    """Whether the value head is collapsing, at least `min_steps` learner steps after the run's first
    figures: the share of its units past their ReLU (`value_active`; None for networks that do not
    report it) fell to `active_floor` or below, or its spread over a batch (`value_std`) fell below
    `std_ratio` of the first figure (`value_std_start`) while it explains less than `explained_floor`
    of the outcomes' variance (`value_explained`, 1 - Var(z - v) / Var(z); a constant v explains 0),
    or it is flat (`value_std` below `std_floor`) over a batch whose outcomes differ.

    A healthy head's spread grows from its start as it learns the outcomes (chess_cpu: 0.03
    untrained, 0.28 at step 461); a dead one (its ReLU passes nothing) gives every position the same
    value, std ~1e-9. A head whose games turn to draws (tic-tac-toe near perfect play) narrows its
    spread rightly but still explains the few decisive games; with every outcome of the batch equal
    (`value_explained` None) a narrow spread is right, and only dead units count. The floor catches a
    head that died before the first figures (the start is then flat too) or whose tanh saturated
    with its units alive (v = +-1 everywhere: 32 value channels at lr 0.1 in bench/value_collapse.py)."""
    if steps_since_start < min_steps:
        return False
    if value_head_dead(value_std, value_active, value_explained, active_floor=active_floor, std_floor=std_floor):
        return True
    return value_explained is not None and value_std < std_ratio * value_std_start and value_explained < explained_floor


def value_head_dead(value_std: float, value_active: Optional[float] = None,
                    value_explained: Optional[float] = None, *, active_floor: float = ACTIVE_FLOOR,
                    std_floor: float = STD_FLOOR) -> bool:
    """The floors of `value_head_collapsing`, which need no start to compare with: at most
    `active_floor` of the head's units past their ReLU, or a spread under `std_floor` over a batch
    whose outcomes differ (`value_explained` not None). An untrained head is neither (chess_cpu: std
    0.03, about half its units active), so a head that shows them at its first figures died before
    them (a 4x64 warm start at lr 0.02, seed 0: std 0.000 at step 100) and is said at once."""
    if value_active is not None and value_active <= active_floor:
        return True
    return value_explained is not None and value_std < std_floor


def collapse_line(step: int, value_std: float, start_step: int, value_std_start: float,
                  value_active: Optional[float], check: str = CHECK) -> str:
    """The one-line warning, naming what to check."""
    share = f"{100 * value_std / value_std_start:.0f}%" if value_std_start > 0 else "-"
    units = "" if value_active is None else f", {100 * value_active:.0f}% of its units active"
    than = "its first figures" if step == start_step else f"{share} of step {start_step}'s"
    return f"value head collapsing at step {step}: value std {value_std:.2g} ({than}){units}; {check}"


@dataclasses.dataclass
class ValueHealthMonitor:
    """The run's first value figures and its warning (at most one per run)."""

    start_step: Optional[int] = None  # the learner step of the first figures
    value_std_start: Optional[float] = None
    value_active_start: Optional[float] = None
    warning: Optional[str] = None  # the line printed, once
    warning_step: Optional[int] = None
    check: str = CHECK  # what the warning asks its reader to check (a warm start's keys differ)
    # the value also reads the input through a linear term (network.resnet.value_input_skip): units
    # that stop passing their ReLU leave it a linear value, not a constant, so only its spread and what
    # it explains count (the progress line still shows the units)
    linear_path: bool = False

    @classmethod
    def from_meta(cls, meta: Mapping, check: str = CHECK, linear_path: bool = False) -> "ValueHealthMonitor":
        """The first figures a checkpoint's meta kept (`meta()`), or none (a new run, older checkpoints)."""
        kept = meta.get("value_health_start") or {}
        return cls(start_step=kept.get("step"), value_std_start=kept.get("value_std"),
                   value_active_start=kept.get("value_active"), check=check, linear_path=linear_path)

    def meta(self) -> dict:
        """What a checkpoint keeps so a resumed run compares with the run's start, not its own."""
        if self.value_std_start is None:
            return {}
        return {"value_health_start": {"step": self.start_step, "value_std": self.value_std_start,
                                       "value_active": self.value_active_start}}

    def observe(self, step: int, metrics: Optional[TrainMetrics]) -> Optional[str]:
        """Takes the last step's metrics of a training call (reaching `step`); returns the warning line
        the first time the head is collapsing, else None. The first figures seen are the start."""
        if metrics is None or metrics.value_std is None:
            return None
        active = None if self.linear_path else metrics.value_active
        first = self.value_std_start is None
        if first:
            self.start_step, self.value_std_start = step, metrics.value_std
            self.value_active_start = metrics.value_active
        collapsing = (value_head_dead(metrics.value_std, active, metrics.value_explained) if first else
                      value_head_collapsing(step - self.start_step, metrics.value_std, self.value_std_start,
                                            active, metrics.value_explained))
        if self.warning is None and collapsing:
            self.warning, self.warning_step = collapse_line(
                step, metrics.value_std, self.start_step, self.value_std_start, metrics.value_active,
                self.check), step
            return self.warning
        return None

    def value_std_vs_start(self, metrics: Optional[TrainMetrics]) -> Optional[float]:
        """The last value std as a share of the first (None before both exist)."""
        if metrics is None or metrics.value_std is None or not self.value_std_start:
            return None
        return metrics.value_std / self.value_std_start

    def summary(self, metrics: Optional[TrainMetrics]) -> Optional[ValueHealth]:
        """The run's value health for its summary (None before any figure)."""
        if self.value_std_start is None:
            return None
        m = metrics or TrainMetrics(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        return ValueHealth(
            start_step=self.start_step, value_std_start=self.value_std_start,
            value_active_start=self.value_active_start, value_std=m.value_std,
            value_std_vs_start=self.value_std_vs_start(metrics), value_active=m.value_active,
            value_explained=m.value_explained, trained_won_by_rules=m.trained_won_by_rules,
            trained_resigned=m.trained_resigned, trained_capped=m.trained_capped,
            trained_drawn_by_rules=m.trained_drawn_by_rules, trained_adjudicated=m.trained_adjudicated,
            sample_age=m.sample_age,
            warning=self.warning, warning_step=self.warning_step)
