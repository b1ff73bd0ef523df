"""The typed messages of a self-play run: what crosses a process (Ray actor) boundary.

Each type lives in the lowest room that produces it and is re-exported here; the run-level ones are
defined here.

    TrainingBatch   replay -> learner      replay/messages.py (a NamedTuple: a JAX pytree)
    ReplayStats     replay -> run          replay/messages.py
    PlayReport      actors -> run          actors/messages.py
    TrainResult     learner -> run         learner/messages.py (with TrainMetrics)
    LearnerLocation learner -> run         learner/messages.py
    EvalReport      evaluator -> run       selfplay/evaluator.py
    RunSummary      run -> selfplay.py     here (printed as JSON via dataclasses.asdict)
"""
from __future__ import annotations

import dataclasses
from typing import Literal, Optional

from actors.messages import PlayReport
from learner.messages import LearnerLocation, TrainMetrics, TrainResult
from replay.messages import ReplayStats, TrainingBatch
from selfplay.evaluator import EvalReport

StopReason = Literal["max_steps", "max_minutes", "interrupted"]


@dataclasses.dataclass(frozen=True)
class RunSummary:
    """What `selfplay.run.run` returns when the run stops (checkpointed, resumable)."""

    stop_reason: StopReason  # why the run stopped (Ctrl-C: "interrupted")
    step: int  # learner steps taken in all (resumed sessions included)
    samples_trained: int  # positions trained on in all (batch_size per step)
    games_total: int  # games in this run's replay directory
    positions_total: int  # positions of those games
    games_this_session: int  # games finished since this process started
    reloaded_games: int  # games found on disk at the start (a resume)
    metrics: Optional[TrainMetrics]  # of the last training step (None if none was taken)
    learner: Optional[LearnerLocation]  # where it trained (None if unreachable at the end)
    seconds: float  # wall time of this session's loop
    games_quarantined: int  # damaged games set aside at the start (chunk files moved to replay/quarantine/)
    actor_restarts: int  # self-play actors Ray restarted after their process died (kill -9, OOM)
    actor_nodes: tuple[str, ...]  # Ray nodes the actors ran on
    evaluation: Optional[EvalReport] = None  # the latest in-run evaluation (evaluation.enabled)


__all__ = ["EvalReport", "LearnerLocation", "PlayReport", "ReplayStats", "RunSummary", "StopReason", "TrainMetrics",
           "TrainResult", "TrainingBatch"]
