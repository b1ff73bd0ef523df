"""Is the run learning chess? Each evaluation's probe figures against the run's first evaluation.

    check = LearningCheck(first_report, after_steps=2000)
    line = check.observe(report)   # the "not learning" warning, once; None otherwise
    summary.learning = check.summary()

A figure *rose* when its 95% interval clears the first evaluation's: the raw policy's or the
search's agreement with Stockfish's best move above the first's interval, the value's error against
Stockfish's win% below it and below a constant draw's (an untrained value that errs more than a
constant can fall back to the constant's level without learning anything), the share of mate
puzzles the raw policy solves above it (the policy learning what the search's mate checks find: the
first chess a network learns on 2 cores). The warning fires at the first evaluation at least
`after_steps` learner steps past the first evaluation where none has risen, so a run that only plays on says so while
there is time to change it (the value head's own warning, learner/health.py, watches the head's
spread instead). Games without the probe set (no Stockfish figures) are never judged.
"""
from __future__ import annotations

from typing import Literal, Optional

from arena import probe
from selfplay.messages import EvalReport, Learning

CHECK = ("check the value health figures, learner.lr_values, search.num_simulations and the outcome mix "
         "(docs/selfplay.md#is-it-learning)")


MateField = Literal["mates_policy", "mates_search"]


def mate_puzzles_played(report: EvalReport, field: MateField) -> Optional[int]:
    """How many puzzles the share `field` of `report` is of (a row from before the raw policy played its
    own mateIn1s counts the search's)."""
    if field == "mates_policy" and report.policy_mate_puzzles is not None:
        return report.policy_mate_puzzles
    return report.mate_puzzles


def mates_interval(report: EvalReport, field: MateField) -> Optional[tuple[float, float]]:
    """The 95% (Wilson) interval of a mate-puzzle share of `report`; None where it has none (off chess,
    or a row written before the puzzles were counted)."""
    rate, n = getattr(report, field), mate_puzzles_played(report, field)
    if rate is None or not n:
        return None
    return probe.wilson(rate * n, n)


def risen(first: EvalReport, latest: EvalReport) -> tuple[str, ...]:
    """The probe figures of `latest` whose 95% interval clears `first`'s: agreement above, error below
    (and below a constant draw's), the raw policy's mate puzzles above."""
    rose = []
    if latest.probe_policy_lower > first.probe_policy_upper:
        rose.append("policy")
    if latest.probe_search_lower > first.probe_search_upper:
        rose.append("search")
    if latest.probe_value_error_upper < min(first.probe_value_error_lower, latest.probe_draw_error):
        rose.append("value")
    then, now = mates_interval(first, "mates_policy"), mates_interval(latest, "mates_policy")
    if then and now and now[0] > then[1]:
        rose.append("mates")
    return tuple(rose)


def not_learning_line(first: EvalReport, latest: EvalReport) -> str:
    """The warning: each figure now and at the first evaluation, with what a random mover / a draw gets."""
    pct = lambda x: f"{100 * x:.1f}%"  # noqa: E731
    return (f"not learning at step {latest.step}: on the probe set no figure has left its interval of step "
            f"{first.step}: the raw policy agrees with Stockfish {pct(latest.probe_policy)} (then "
            f"{pct(first.probe_policy)}, a random mover {pct(latest.probe_random)}), the search "
            f"{pct(latest.probe_search)} (then {pct(first.probe_search)}), the value errs by "
            f"{latest.probe_value_error:.1f} win% (then {first.probe_value_error:.1f}, a constant draw "
            f"{latest.probe_draw_error:.1f}){_mates_text(first, latest)}; {CHECK}")


def _mates_text(first: EvalReport, latest: EvalReport) -> str:
    """The raw policy's mate puzzles for the warning, where both evaluations counted them."""
    if not all(mates_interval(r, "mates_policy") for r in (first, latest)):
        return ""
    return (f", the raw policy solves {100 * latest.mates_policy:.1f}% of "
            f"{mate_puzzles_played(latest, 'mates_policy')} mate puzzles (then {100 * first.mates_policy:.1f}%)")


class LearningCheck:
    """The run's first evaluation with probe figures and the warning (at most one per session)."""

    def __init__(self, first: Optional[EvalReport] = None, after_steps: int = 2000):
        self.first = first if first is not None and first.probe_policy is not None else None
        self.after_steps = after_steps  # 0: never warn
        self.latest: Optional[EvalReport] = None
        self.warning: Optional[str] = None

    def observe(self, report: EvalReport) -> Optional[str]:
        """Takes an evaluation's report; returns the warning line the first time it is due."""
        if report.probe_policy is None:
            return None
        if self.first is None:
            self.first = report
            return None
        self.latest = report
        due = self.after_steps and report.step - self.first.step >= self.after_steps
        if due and self.warning is None and not risen(self.first, report):
            self.warning = not_learning_line(self.first, report)
            return self.warning
        return None

    def summary(self) -> Optional[Learning]:
        """None before a second evaluation with probe figures."""
        if self.first is None or self.latest is None:
            return None
        return Learning(self.first.step, self.latest.step, risen(self.first, self.latest), self.warning)


def learning_text(learning: Learning) -> str:
    """One line for the run's last lines: which probe figures left the first evaluation's interval."""
    names = {"policy": "the raw policy's agreement", "search": "the search's agreement", "value": "the value's error",
             "mates": "the raw policy's mate puzzles"}
    if learning.rose:
        return (f"learning: from step {learning.first_step} to {learning.step} "
                f"{', '.join(names[r] for r in learning.rose)} left the first interval (probe, 95%)")
    return (f"not learning yet: from step {learning.first_step} to {learning.step} no probe figure left its first "
            f"interval (95%)")
