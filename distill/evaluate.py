"""Evaluation of a player (any arena agent: the trained student, or a baseline such as `random` or
`stockfish:nodes=500`): action accuracy and Kendall's tau against the oracle's per-move values on
the held-out games, imitation (per record source, how often the player's move is the favourite of
the record's policy: a teacher's raw policy, a search's visits), and puzzle accuracy (overall and per
400-point rating band), as one JSON.

Action accuracy: the player's top move has the oracle's best value (ties, e.g. two mates, count);
a player with `move_scores(board)` (the students) is judged by its top-scored move, any other by
the move it selects. Kendall's tau (tau-b): between the player's move scores and the oracle's move
values, per board, averaged over boards where both vary (None for players without scores). Both
are arena/suites/actions.py's, as `match.py --suite` scores an actions file. Puzzles (Lichess
format): after the setup move Moves[0] the player must find every solver move (1, 3, 5, ...; a
different move that mates also counts, as on Lichess); the opponent's replies come from the solution.
"""
from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path

import numpy as np
from rich.progress import track

from arena import (
                   BAND_WIDTH,
                   Puzzle,
                   agent_action_metrics,
                   fresh_move,
                   rating_band,
                   read_puzzles,
                   solve_puzzle,
)
from arena import action_metrics as score_action_metrics  # arena's, of a move scorer (action_metrics below: a player's)
from distill.records import RecordStore
from distill.student import STUDENT_DIR
from games import chess_bridge
from models import network_dir


def action_metrics(player, records: list[dict], show_progress: bool = False) -> dict:
    """{"action_accuracy", "kendall_tau", "boards", "tau_boards"} of `player` on `records`, as
    arena/suites/actions.py computes them: by the top-scored move and Kendall's tau for a player
    with `move_scores(board)`, by the move it selects (no tau) for any other. ValueError where a
    record's moves are not its board's legal moves (checked before any board is played)."""
    for rec in records:
        if set(rec["moves"]) != {m.uci() for m in chess_bridge.parse_fen(rec["fen"]).legal_moves}:
            raise ValueError(f"record {rec['fen']}: its moves are not the legal moves")
    move_scores = getattr(player, "move_scores", None)
    if move_scores is not None:
        metrics = score_action_metrics(move_scores, records, progress=show_progress)
    else:
        metrics = agent_action_metrics(player, records, progress=show_progress)
    if not records:  # distill's report has said 0.0 for no boards (evaluate.max_boards=0); arena says None
        metrics["action_accuracy"] = 0.0
    return metrics


def puzzle_metrics(player, puzzles: list[Puzzle], show_progress: bool = False) -> dict:
    """{"puzzle_accuracy", "puzzles", "bands": {"800-1199": {"accuracy", "puzzles"}, ...}}; a puzzle
    is solved as `match.py --suite puzzles` scores it (arena.suites.solve_puzzle)."""
    bands: dict[int, list[bool]] = {}
    for pz in track(puzzles, "puzzles", disable=not show_progress):
        bands.setdefault(pz.rating // BAND_WIDTH, []).append(solve_puzzle(player, pz).solved)
    solved = [s for v in bands.values() for s in v]
    return {"puzzle_accuracy": float(np.mean(solved)) if solved else None, "puzzles": len(solved),
            "bands": {rating_band(b * BAND_WIDTH): {"accuracy": float(np.mean(v)), "puzzles": len(v)}
                      for b, v in sorted(bands.items())}}


@dataclasses.dataclass(frozen=True)
class HeldOut:
    """Held-out boards of a record directory (its test split), in a seeded random order."""

    scored: list[dict]  # records with a value for every move: action accuracy and Kendall's tau
    with_policy: dict[str, list[dict]]  # per record source, records with a policy target: imitation


def held_out_records(records_dir: str | Path, test_fraction: float, max_boards: int, seed: int) -> HeldOut:
    """Up to `max_boards` scored records and up to `max_boards` records with a policy per source
    ("teacher": a teacher's raw policy; "selfplay": a search's visits). Policy-only boards have no
    values to score a move against; the policy is what a student of them imitates."""
    store = RecordStore(records_dir)
    idx = np.random.default_rng(seed).permutation(store.split("test", test_fraction))
    scored, with_policy = [], {}
    for i in idx:
        if len(scored) == max_boards and all(len(v) == max_boards for v in with_policy.values()):
            break
        rec = store[int(i)]
        if len(scored) < max_boards and np.all(np.isfinite(rec["values"])):
            scored.append(rec)
        if rec.get("policy") is not None:
            group = with_policy.setdefault(rec.get("source") or "unknown", [])
            if len(group) < max_boards:
                group.append(rec)
    store.close()
    return HeldOut(scored, with_policy)


def imitation_metrics(player, with_policy: dict[str, list[dict]], show_progress: bool = False) -> dict:
    """Per source, {"agreement" (the player's move is the record policy's favourite), "interval"
    (Wilson 95%), "policy_on_move" (the record policy's mean mass on the player's move),
    "policy_on_favourite", "boards"}: how closely a student follows what it was taught, and on
    which boards it does not."""
    from arena import probe

    report = {}
    for source, records in sorted(with_policy.items()):
        hits, on_move, on_favourite = 0, [], []
        for rec in track(records, f"imitation ({source})", disable=not show_progress):
            policy = np.asarray(rec["policy"], np.float64)
            favourite = int(np.argmax(policy))
            move = fresh_move(player, chess_bridge.parse_fen(rec["fen"])).uci()
            mass = policy[rec["moves"].index(move)] if move in rec["moves"] else 0.0
            hits += move == rec["moves"][favourite]
            on_move.append(mass)
            on_favourite.append(policy[favourite])
        n = len(records)
        report[source] = {"agreement": hits / n if n else None, "interval": list(probe.wilson(hits, n)),
                          "policy_on_move": float(np.mean(on_move)) if n else None,
                          "policy_on_favourite": float(np.mean(on_favourite)) if n else None, "boards": n}
    return report


def student_dir(path: str | Path) -> Path:
    """The student network directory of a distill run directory (or the directory itself)."""
    path = Path(path)
    if (path / network_dir.CONFIG_FILE).exists():
        return path
    if (path / STUDENT_DIR / network_dir.CONFIG_FILE).exists():
        return path / STUDENT_DIR
    raise FileNotFoundError(f"no student network directory in {path} (expected {path}/{STUDENT_DIR}/"
                            f"{network_dir.CONFIG_FILE}; run 'distill.py train' first)")


def make_player(cfg):
    """The arena agent `evaluate.player` names: "student" (the student network of evaluate.net or
    train.out_dir, argmax with the repetition fix) or any agent spec."""
    e = cfg.evaluate
    if e.player == "student":
        from arena import StudentAgent, load_student
        network, target = load_student(str(student_dir(e.net or cfg.train.out_dir)))
        return StudentAgent(network, target, seed=e.seed)
    from arena import make_agent
    return make_agent(e.player)


def evaluate(cfg, show_progress: bool = True) -> dict:
    """Runs all metrics for `cfg.evaluate`; writes and returns the JSON report."""
    from runtime import data_file

    e = cfg.evaluate
    student = e.player == "student"
    if student:
        net = student_dir(e.net or cfg.train.out_dir)  # fail fast on a missing network directory
    else:
        from arena import check_agent
        check_agent(e.player)  # a bad spec or a missing engine fails before any work
    puzzles = read_puzzles(data_file(e.puzzles), e.max_puzzles) if e.max_puzzles > 0 else []
    held_out = held_out_records(cfg.data.records, cfg.data.test_fraction, e.max_boards, e.seed)
    player = make_player(cfg)
    start = time.time()
    try:
        report = {"player": player.name, **action_metrics(player, held_out.scored, show_progress),
                  "imitation": imitation_metrics(player, held_out.with_policy, show_progress),
                  **puzzle_metrics(player, puzzles, show_progress)}
    finally:
        player.close()
    report["seconds"] = time.time() - start
    if student:
        report["net"] = str(net)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", player.name)
    out = Path(e.out or Path((e.net or cfg.train.out_dir) if student else cfg.train.out_dir)
               / f"eval_{name}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    report["settings"] = {**dataclasses.asdict(e), "records": str(cfg.data.records),
                          "test_fraction": cfg.data.test_fraction}
    out.write_text(json.dumps(report, indent=1))
    # The JSON is the latest report; a rerun with other settings must not lose the earlier one.
    with open(out.with_suffix(".jsonl"), "a") as history:
        history.write(json.dumps(report) + "\n")
    report["out"] = str(out)
    return report
