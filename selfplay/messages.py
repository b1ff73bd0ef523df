"""The typed messages of a self-play run: what crosses a process (Ray actor) boundary.

Each type lives in the lowest room that produces it and is re-exported here; the run-level ones are
defined here.

    TrainingBatch   replay -> learner      replay/messages.py (a NamedTuple: a JAX pytree)
    ReplayStats     replay -> run          replay/messages.py
    PlayReport      actors -> run          actors/messages.py
    TrainResult     learner -> run         learner/messages.py (with TrainMetrics)
    ValueHealth     run -> RunSummary      learner/messages.py (learner/health.py: the value head vs the run's start)
    LearnerLocation learner -> run         learner/messages.py
    EvalRequest     run -> evaluator       here
    EvalReport      evaluator -> run       here
    RunSummary      run -> selfplay.py     here (runs/<name>/summary.json: selfplay/summary.py), with
    LearnerFigures and GpuFigures
"""
from __future__ import annotations

import dataclasses
from typing import Any, Literal, Optional

from actors import PlayReport
from learner import LearnerLocation, TrainMetrics, TrainResult, ValueHealth
from replay import ReplayStats, TrainingBatch

StopReason = Literal["max_steps", "max_minutes", "interrupted"]


@dataclasses.dataclass(frozen=True)
class EvalRequest:
    """What the run knows when it asks for an evaluation."""

    step: int  # learner step reached
    hours: float  # wall time of the run so far (all sessions)
    positions: int  # self-play positions generated so far
    games: int  # self-play games finished so far
    loss: Optional[float] = None  # the learner's last total loss
    variables: Any = None  # the network to evaluate; None: the newest published in the parameter store


@dataclasses.dataclass(frozen=True)
class EvalReport:
    """One evaluation: the network's rating (refitted with every game so far) and its results."""

    step: int  # the evaluated network's step (its publication version)
    hours: float
    positions: int
    games: int
    loss: Optional[float]
    elo: float  # against random = 0
    elo_lower: float  # 95% interval
    elo_upper: float
    score_vs_random: float  # mean points per game against the random mover
    mates_search: Optional[float]  # chess: fraction of the mate puzzles solved by the search (mateIn1 + mateIn2)
    mates_policy: Optional[float]  # ... and of the raw policy's (mateIn1; before policy_mate_puzzles, the search's)
    seconds: float  # the evaluation's wall time
    policy_elo: Optional[float] = None  # the raw policy (no search) against the same anchors
    policy_elo_lower: Optional[float] = None  # (None in ratings.csv rows written before it was rated)
    policy_elo_upper: Optional[float] = None
    policy_score_vs_random: Optional[float] = None
    scores: tuple[tuple[str, float], ...] = ()  # opponent -> mean points per game (the searched network)
    # chess, the probe set (arena/batched/probe.py): share of positions where the move is Stockfish's best
    # (95% interval), for the raw policy, the search and a random mover; win% lost per move; the
    # value's mean absolute error in win% against Stockfish's, and a constant draw's
    probe_policy: Optional[float] = None
    probe_policy_lower: Optional[float] = None
    probe_policy_upper: Optional[float] = None
    probe_search: Optional[float] = None
    probe_search_lower: Optional[float] = None
    probe_search_upper: Optional[float] = None
    probe_random: Optional[float] = None
    probe_regret_policy: Optional[float] = None
    probe_regret_search: Optional[float] = None
    probe_value_error: Optional[float] = None
    probe_value_error_lower: Optional[float] = None
    probe_value_error_upper: Optional[float] = None
    probe_draw_error: Optional[float] = None
    mate_puzzles: Optional[int] = None  # chess: the puzzles the search played (mateIn1 + mateIn2; intervals: mates_interval)
    # chess: the mateIn1 puzzles the raw policy played (None in rows written before it had its own: it then
    # played mate_puzzles, the search's)
    policy_mate_puzzles: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class LearnerFigures:
    """How the learner kept up over a session of the run."""

    steps: int  # training steps this session (the first call's, which compiles the step, not counted here)
    samples_per_s_training: float  # batch_size x steps / seconds_training: its rate while it trains
    seconds_training: float  # wall time of its training calls (it idles while the train ratio holds it)
    seconds_waiting_for_batches: float  # of which waiting for replay batches
    train_ratio: float  # samples trained per position generated this session (cf. learner.train_ratio)


@dataclasses.dataclass(frozen=True)
class GpuFigures:
    """The node's GPUs over a session of the run (NVML; selfplay/gpu_monitor.py)."""

    names: tuple[str, ...]  # one per GPU, e.g. "NVIDIA H100 80GB HBM3"
    busy_mean: Optional[float]  # % of time a kernel ran, mean over the GPUs and the session
    busy_mean_after_first_minute: Optional[float]  # ... without the first minute (compiles, warm-up)
    memory_peak_gb: Optional[float]  # the most GiB in use on one GPU (every process)
    memory_total_gb: float  # GiB per GPU


@dataclasses.dataclass(frozen=True)
class Learning:
    """What the probe set says of a run so far, against its first evaluation (selfplay/evaluation/learning.py)."""

    first_step: int  # the step of the run's first evaluation with probe figures
    step: int  # the latest evaluation's
    rose: tuple[str, ...]  # the figures whose 95% interval cleared the first's: "policy", "search", "value", "mates"
    warning: Optional[str] = None  # the "not learning" line, if it was printed


@dataclasses.dataclass(frozen=True)
class RunSummary:
    """What `selfplay.run.run` returns when the run stops (checkpointed, resumable)."""

    stop_reason: StopReason  # why the run stopped (Ctrl-C: "interrupted")
    step: int  # learner steps taken in all (resumed sessions included)
    start_step: int  # the step this session started from: the restored checkpoint's (0 for a new run)
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
    positions_per_s: float = 0.0  # positions generated per second this session
    positions_per_s_after_first_minute: Optional[float] = None  # ... without its first minute (None: shorter)
    plies_searched_per_s_after_first_minute: Optional[float] = None  # positions searched, finished games or not
    learner_figures: Optional[LearnerFigures] = None  # the learner's rate and achieved train ratio
    gpus: Optional[GpuFigures] = None  # GPU busy % and memory (None: no NVIDIA GPU on this node)
    value_health: Optional[ValueHealth] = None  # value head vs the run's start, its warning (None: no step yet)
    learning: Optional[Learning] = None  # the probe set against the run's first evaluation (None: fewer than two)
    resign_threshold: Optional[float] = None  # the actors' last (actors.resign_false_positive_target moves it)
    sparring_games: int = 0  # sparring games finished this session (actors.sparring_fraction)
    sparring_score: Optional[float] = None  # the network's score over them (None: none)


__all__ = ["EvalReport", "EvalRequest", "GpuFigures", "LearnerFigures", "Learning", "LearnerLocation", "PlayReport", "ReplayStats", "RunSummary", "StopReason", "TrainMetrics",
           "TrainResult", "TrainingBatch", "ValueHealth"]
