"""Action accuracy and Kendall's tau against reference per-move values (annotated records).

A record is `{"fen", "moves": [uci, ...], "values": [float, ...]}` (the distill record format:
every legal move with its reference value, e.g. Stockfish win probability). For a player that
gives per-move scores:

- action accuracy: the player's top-scored move has the best reference value (ties count, so
  any of two mates is right);
- Kendall's tau (tau-b) between the player's scores and the reference values on the same moves,
  averaged over boards where both vary (boards with one move or constant values carry no order).

`action_metrics(score_fn, records)` takes any callable `board -> (moves, scores)` or
`board -> {uci: score}` (distill's `player.move_scores` fits as is). Agents that only choose a
move (the `Agent` interface) get action accuracy from `agent_action_metrics`, with no tau.
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import chess
import numpy as np

from arena.agents.agent import Agent, Limit
from arena.suites.common import new_position, select
from arena.suites.report import ItemResult

# board -> (moves, scores) or {uci: score}
ScoreFn = Callable[[chess.Board],
                   "tuple[Sequence[chess.Move | str], Sequence[float]] | Mapping[str, float]"]


@dataclasses.dataclass(frozen=True)
class ActionRecord:
    id: str
    fen: str
    moves: tuple[str, ...]  # UCI
    values: tuple[float, ...]  # reference value of each move, higher is better


def as_record(rec: Mapping, index: int = 0) -> ActionRecord:
    """A distill-style dict -> ActionRecord (ValueError if moves/values do not match)."""
    moves, values = tuple(rec["moves"]), tuple(float(v) for v in rec["values"])
    if not moves or len(moves) != len(values):
        raise ValueError(f"record {index} ({rec.get('fen')}): moves and values must be non-empty "
                         "and of equal length")
    return ActionRecord(str(rec.get("id") or rec.get("game") or index), rec["fen"], moves, values)


def read_records(path: str | Path, limit: int | None = None) -> list[ActionRecord]:
    """Records from a JSON-lines file, one `{"fen", "moves", "values"}` object per line."""
    out = []
    with open(path) as f:
        for n, line in enumerate(f, start=1):
            if line.strip():
                try:
                    out.append(as_record(json.loads(line), n))
                except (KeyError, json.JSONDecodeError) as e:
                    raise ValueError(f"records file {path} line {n}: bad record ({e})") from None
                if limit is not None and len(out) >= limit:
                    break
    return out


def _scores_by_move(result) -> dict[str, float]:
    if isinstance(result, Mapping):
        return {str(k): float(v) for k, v in result.items()}
    moves, scores = result
    return {(m.uci() if isinstance(m, chess.Move) else str(m)): float(s)
            for m, s in zip(moves, np.asarray(scores, dtype=float).tolist())}


def board_metrics(scores: Mapping[str, float], values: Mapping[str, float],
                  where: str = "board") -> tuple[bool, float | None]:
    """(top-scored move has the best value, tau-b or None) for one board. `scores` must score
    exactly the moves of `values`."""
    if set(scores) != set(values):
        raise ValueError(f"{where}: the scored moves are not the reference moves "
                         f"({len(scores)} scored, {len(values)} reference)")
    ucis = list(scores)  # the scorer's order: of equal top scores the first is the one it plays
    s = np.array([scores[u] for u in ucis])
    v = np.array([values[u] for u in ucis])
    correct = bool(v[int(np.argmax(s))] >= v.max() - 1e-9)
    tau = None
    if np.ptp(v) > 0 and np.ptp(s) > 0:
        from scipy.stats import (
            kendalltau,  # here, not at the top: scipy.stats takes ~1 s to import (arena's face loads this module)
        )
        tau = float(kendalltau(s, v).statistic)
    return correct, tau


def action_metrics(score_fn: ScoreFn, records: Iterable[ActionRecord | Mapping],
                   progress: bool = False) -> dict:
    """{"action_accuracy", "kendall_tau", "boards", "tau_boards"} of a per-move scorer."""
    from rich.progress import track

    recs = [r if isinstance(r, ActionRecord) else as_record(r, i) for i, r in enumerate(records)]
    correct, taus = 0, []
    for rec in track(recs, "actions", disable=not progress):
        ok, tau = board_metrics(_scores_by_move(score_fn(chess.Board(rec.fen))),
                                dict(zip(rec.moves, rec.values)), f"record {rec.id} ({rec.fen})")
        correct += ok
        if tau is not None:
            taus.append(tau)
    return {"action_accuracy": correct / len(recs) if recs else None,
            "kendall_tau": float(np.mean(taus)) if taus else None,
            "boards": len(recs), "tau_boards": len(taus)}


def solve_action(agent: Agent, record: ActionRecord, move_limit: Limit | None = None) -> ItemResult:
    """One board: the agent's chosen move against the reference values; if the agent also has
    `move_scores(board)` (distill players do), Kendall's tau of its scores too."""
    board = chess.Board(record.fen)
    values = dict(zip(record.moves, record.values))
    new_position(agent)
    start = time.perf_counter()
    move, info = select(agent, board, move_limit)
    seconds = time.perf_counter() - start
    uci = move.uci()
    best = max(values.values())
    solved = uci in values and values[uci] >= best - 1e-9
    tau = None
    score_fn = getattr(agent, "move_scores", None)
    if callable(score_fn):
        _, tau = board_metrics(_scores_by_move(score_fn(board)), values, f"record {record.id}")
    error = None if uci in values else f"move {uci} is not among the record's moves"
    return ItemResult(record.id, solved, (uci,), nodes=int(info.get("nodes") or 0),
                      seconds=seconds, error=error, tau=tau)


def agent_action_metrics(agent: Agent, records: Iterable[ActionRecord | Mapping],
                         move_limit: Limit | None = None, progress: bool = False) -> dict:
    """action_metrics for an agent that only chooses moves (tau only if it has move_scores)."""
    from rich.progress import track

    recs = [r if isinstance(r, ActionRecord) else as_record(r, i) for i, r in enumerate(records)]
    results = [solve_action(agent, r, move_limit) for r in track(recs, "actions", disable=not progress)]
    taus = [r.tau for r in results if r.tau is not None]
    return {"action_accuracy": sum(r.solved for r in results) / len(recs) if recs else None,
            "kendall_tau": float(np.mean(taus)) if taus else None,
            "boards": len(recs), "tau_boards": len(taus)}
