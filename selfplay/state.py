"""RunState: the counters of one session of a run, which the loop's steps read and update, and the
figures derived from them (samples trained, the train ratio allowed and achieved, rates)."""
from __future__ import annotations

import dataclasses
import time
from typing import Optional

from selfplay.messages import LearnerFigures, PlayReport, ReplayStats, StopReason, TrainMetrics


@dataclasses.dataclass
class RunState:
    """The counters of one session of a run: what the loop's steps read and update."""

    batch_size: int  # positions per learner step
    step: int  # learner steps taken in all (the last the learner reported)
    samples_base: int  # samples trained before this session (from the checkpoint)
    step_base: int  # the step this session started at
    games_total: int  # games in the replay directory
    positions_total: int  # positions of those games
    games_at_start: int  # games found on disk at the start
    next_pgn: int  # games_total at which the next sample game goes to games.pgn
    seconds_base: float = 0.0  # wall time of the run's earlier sessions
    started: float = dataclasses.field(default_factory=time.monotonic)  # monotonic time the loop began
    metrics: Optional[TrainMetrics] = None  # of the last training step
    steps_in_flight: int = 0  # steps of the training call started and not yet reported
    last_report: float = 0.0  # monotonic time of the last progress update
    actor_nodes: set[str] = dataclasses.field(default_factory=set)
    stop_reason: StopReason = "interrupted"
    actor_restarts: list[int] = dataclasses.field(default_factory=list)  # per self-play actor: Ray's restarts
    restarts_checked: float = 0.0  # monotonic time of the last look at them
    positions_at_start: int = 0  # positions_total when this session began
    plies_searched: int = 0  # positions the actors searched this session, finished games or not
    learner_steps: int = 0  # steps this session's training calls took (the first call, which compiles, aside)
    learner_seconds: float = 0.0  # wall time of those calls
    learner_wait_seconds: float = 0.0  # of which the learner waited for replay batches
    warm: Optional[tuple[float, int, int]] = None  # (monotonic time, positions, plies searched) one minute in
    learner_calls: int = 0  # training calls finished this session
    stopped: Optional[float] = None  # monotonic time the loop ended (rates exclude the shutdown)

    @classmethod
    def at_start(cls, batch_size: int, step: int, samples_trained: int, seconds_total: float,
                 replay: ReplayStats, sample_game_every: int) -> "RunState":
        """A session's counters at its start: the checkpoint's step, samples and seconds, and the
        games the replay reloaded."""
        every = sample_game_every
        return cls(batch_size=batch_size, step=step, samples_base=samples_trained, step_base=step,
                   games_total=replay.games_total, positions_total=replay.positions_total,
                   games_at_start=replay.games_total, positions_at_start=replay.positions_total,
                   next_pgn=(replay.games_total // every + 1) * every, seconds_base=seconds_total)

    def samples_trained(self, at_step: int | None = None) -> int:
        """Samples trained at `at_step` (default: the step reached). Exact from the step, even if
        Ctrl-C lands inside a step: those before this session plus batch_size per step since."""
        return self.samples_base + ((self.step if at_step is None else at_step) - self.step_base) * self.batch_size

    def hours(self) -> float:
        """Wall time of the run so far, all sessions."""
        return (self.seconds_base + time.monotonic() - self.started) / 3600

    def limit_reached(self, max_steps: int, max_minutes: float) -> Optional[StopReason]:
        """The stop condition this run has met, if any (limit_reached below)."""
        return limit_reached(self.step, self.hours() * 60, max_steps, max_minutes)

    def steps_allowed(self, train_ratio: float) -> int:
        """Learner steps the train ratio allows beyond those taken or in flight."""
        trained = self.samples_trained(self.step + self.steps_in_flight)
        return int((train_ratio * self.positions_total - trained) // self.batch_size)

    def train_ratio(self) -> float:
        """Samples trained per position generated, this session (the configured learner.train_ratio
        once the learner keeps up; 0 before any position)."""
        made = self.positions_total - self.positions_at_start
        return (self.step - self.step_base) * self.batch_size / made if made else 0.0

    def learner_figures(self) -> LearnerFigures:
        busy = self.learner_seconds
        return LearnerFigures(
            steps=self.learner_steps, samples_per_s_training=self.learner_steps * self.batch_size / busy if busy else 0.0,
            seconds_training=busy, seconds_waiting_for_batches=self.learner_wait_seconds,
            train_ratio=self.train_ratio())

    def played(self, report: PlayReport) -> None:
        self.games_total += report.games
        self.positions_total += sum(report.game_plies)
        self.plies_searched += report.positions
        self.actor_nodes.add(report.node)
        if self.warm is None and time.monotonic() - self.started >= 60:
            self.warm = (time.monotonic(), self.positions_total, self.plies_searched)

    def positions_per_s(self) -> float:
        """Positions of games finished this session per second of it."""
        made = self.positions_total - self.positions_at_start
        return made / max((self.stopped or time.monotonic()) - self.started, 1e-9)

    def warm_positions_per_s(self) -> Optional[float]:
        """Positions of finished games per second since the first minute (compiles and warm-up), or
        None before it. Lags the search's rate while games are in flight (warm_plies_searched_per_s)."""
        if self.warm is None:
            return None
        t, positions, _ = self.warm
        return (self.positions_total - positions) / max((self.stopped or time.monotonic()) - t, 1e-9)

    def warm_plies_searched_per_s(self) -> Optional[float]:
        """Positions searched per second since the first minute, finished games or not: the actors'
        speed, which a short run's finished games understate (thousands of games in flight end late)."""
        if self.warm is None:
            return None
        t, _, plies = self.warm
        return (self.plies_searched - plies) / max((self.stopped or time.monotonic()) - t, 1e-9)


def limit_reached(step: int, minutes: float, max_steps: int, max_minutes: float) -> Optional[StopReason]:
    """The stop condition a run at `step` after `minutes` of wall time (every session) has met, if any:
    both limits count every session, so a resumed run finishes the budget an interruption cut short
    and a finished one needs a higher limit to go on (0: no limit)."""
    if max_steps and step >= max_steps:
        return "max_steps"
    if max_minutes and minutes >= max_minutes:
        return "max_minutes"
    return None
