"""Evaluation of a player: action accuracy and Kendall's tau against the oracle's per-move values on
the held-out games, and puzzle accuracy (overall and per 400-point rating band), as one JSON.

Action accuracy: the player's top move has the oracle's best value (ties, e.g. two mates, count).
Kendall's tau (tau-b): between the player's move scores and the oracle's move values, per board,
averaged over boards where both vary. Puzzles (Lichess format): after the setup move Moves[0] the
player must find every solver move (1, 3, 5, ...; a different move that mates also counts, as on
Lichess); the opponent's replies come from the solution.
"""
from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import chess
import numpy as np
from rich.progress import track
from scipy.stats import kendalltau

from distill import policy as policy_lib
from distill.records import RecordStore

BAND = 400  # rating band width


def action_metrics(player, records: list[dict], show_progress: bool = False) -> dict:
    """{"action_accuracy", "kendall_tau", "boards", "tau_boards"} of `player` on `records`."""
    correct, taus = 0, []
    for rec in track(records, "actions", disable=not show_progress):
        board = chess.Board(rec["fen"])
        oracle = dict(zip(rec["moves"], rec["values"]))
        moves, scores = player.move_scores(board)
        ucis = [m.uci() for m in moves]
        if set(ucis) != set(oracle):
            raise ValueError(f"record {rec['fen']}: its moves are not the legal moves")
        values = np.array([oracle[u] for u in ucis])
        correct += values[int(np.argmax(scores))] >= values.max() - 1e-9
        if np.ptp(values) > 0 and np.ptp(scores) > 0:
            taus.append(kendalltau(scores, values).statistic)
    return {"action_accuracy": correct / max(len(records), 1),
            "kendall_tau": float(np.mean(taus)) if taus else None,
            "boards": len(records), "tau_boards": len(taus)}


def read_puzzles(path: str | Path, limit: int | None = None) -> list[dict]:
    """Lichess puzzle CSV rows as {"id", "fen", "moves": [uci], "rating"}."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"puzzle file {path} not found")
    out = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if not {"FEN", "Moves", "Rating"} <= set(row):
                raise ValueError(f"{path}: needs columns FEN, Moves, Rating")
            out.append({"id": row.get("PuzzleId", ""), "fen": row["FEN"],
                        "moves": row["Moves"].split(), "rating": int(row["Rating"])})
            if limit is not None and len(out) >= limit:
                break
    return out


def solves(player, puzzle: dict) -> bool:
    """Whether `player` finds every solver move of the puzzle line."""
    board = chess.Board(puzzle["fen"])
    line = puzzle["moves"]
    board.push_uci(line[0])
    for i in range(1, len(line), 2):
        move, _ = player.select(board)
        if move.uci() != line[i]:
            board.push(move)
            return board.is_checkmate()
        board.push(move)
        if i + 1 < len(line):
            board.push_uci(line[i + 1])
    return True


def puzzle_metrics(player, puzzles: list[dict], show_progress: bool = False) -> dict:
    """{"puzzle_accuracy", "puzzles", "bands": {"800-1199": {"accuracy", "puzzles"}, ...}}."""
    bands: dict[int, list[bool]] = {}
    for pz in track(puzzles, "puzzles", disable=not show_progress):
        bands.setdefault(pz["rating"] // BAND * BAND, []).append(solves(player, pz))
    solved = [s for v in bands.values() for s in v]
    return {"puzzle_accuracy": float(np.mean(solved)) if solved else None, "puzzles": len(solved),
            "bands": {f"{lo}-{lo + BAND - 1}": {"accuracy": float(np.mean(v)), "puzzles": len(v)}
                      for lo, v in sorted(bands.items())}}


def test_records(records_dir: str | Path, test_fraction: float, max_boards: int, seed: int) -> list[dict]:
    """Up to `max_boards` records of the held-out games, in a seeded random order."""
    store = RecordStore(records_dir)
    idx = store.split("test", test_fraction)
    idx = np.random.default_rng(seed).permutation(idx)[:max_boards]
    recs = [store[int(i)] for i in idx]
    store.close()
    return recs


def make_player(cfg):
    """The player `evaluate.player` names: the student of the checkpoint, or a baseline."""
    e, a = cfg.evaluate, cfg.annotate
    if e.player == "student":
        return policy_lib.load_player("student", e.checkpoint or cfg.train.out_dir, cfg.policy, e.seed)
    if e.player == "stockfish":
        return policy_lib.load_player("stockfish", policy=cfg.policy, seed=e.seed,
                                      nodes_per_move=a.nodes_per_move,
                                      time_per_move=a.time_per_move, engine=a.engine)
    if e.player == "random":
        return policy_lib.load_player("random", policy=cfg.policy, seed=e.seed)
    raise ValueError(f"evaluate.player must be student, random or stockfish, got {e.player!r}")


def evaluate(cfg, show_progress: bool = True) -> dict:
    """Runs all metrics for `cfg.evaluate`; writes and returns the JSON report."""
    from configs.paths import data_file

    e = cfg.evaluate
    if e.player == "student":
        policy_lib.student_dir(e.checkpoint or cfg.train.out_dir)  # fail fast on a missing checkpoint
    puzzles = read_puzzles(data_file(e.puzzles), e.max_puzzles) if e.max_puzzles > 0 else []
    records = test_records(cfg.data.records, cfg.data.test_fraction, e.max_boards, e.seed)
    player = make_player(cfg)
    start = time.time()
    try:
        report = {"player": player.name, **action_metrics(player, records, show_progress),
                  **puzzle_metrics(player, puzzles, show_progress)}
    finally:
        if hasattr(player, "close"):
            player.close()
    report["seconds"] = time.time() - start
    if e.player == "student":
        report["checkpoint"] = str(policy_lib.student_dir(e.checkpoint or cfg.train.out_dir))
    out = Path(e.out) if e.out else (Path(e.checkpoint or cfg.train.out_dir) / f"eval_{player.name}.json"
                                     if e.player == "student" else Path(cfg.train.out_dir) / f"eval_{e.player}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    report["out"] = str(out)
    return report
