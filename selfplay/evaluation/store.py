"""The in-run evaluator's files: who played whom (games.csv) and each evaluation's ratings
(ratings.csv), read back on a resume; the names of the rated players.

    reports = read_reports(run_dir / "eval" / "ratings.csv")   # [EvalReport], in order
    results = read_games(run_dir / "eval" / "games.csv")       # [(step, GameResult)]
    append_csv(path, RATINGS_FIELDS, [report_row(report)])
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Optional

from arena import GameResult
from selfplay.messages import EvalReport

RANDOM = "random"
PROBE_FIELDS = ("probe_policy", "probe_policy_lower", "probe_policy_upper", "probe_search", "probe_search_lower",
                "probe_search_upper", "probe_random", "probe_regret_policy", "probe_regret_search",
                "probe_value_error", "probe_value_error_lower", "probe_value_error_upper", "probe_draw_error")
RATINGS_FIELDS = ("step", "hours", "positions", "games", "loss", "elo", "elo_lower", "elo_upper",
                  "score_vs_random", "mates_search", "mates_policy", "seconds", "policy_elo",
                  "policy_elo_lower", "policy_elo_upper", "policy_score_vs_random") + PROBE_FIELDS + (
                  "mate_puzzles", "policy_mate_puzzles")
GAMES_FIELDS = ("step", "white", "black", "score", "plies", "termination")


def network_name(step: int) -> str:
    return f"step-{step}"


def policy_name(step: int) -> str:
    """The raw policy of network_name(step) as a rated player."""
    return f"policy-{network_name(step)}"


def is_run_player(name: str) -> bool:
    """A network of the run (searched or raw policy), not a fixed anchor."""
    return name.startswith(("step-", "policy-step-"))


def _float_or_none(text: Optional[str]) -> Optional[float]:
    return None if text in (None, "", "None") else float(text)


def _int_or_none(text: Optional[str]) -> Optional[int]:
    return None if text in (None, "", "None") else int(float(text))


def read_reports(path: Path) -> list[EvalReport]:
    """ratings.csv -> its evaluations, in order."""
    if not path.exists():
        return []
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return [EvalReport(step=int(r["step"]), hours=float(r["hours"]), positions=int(r["positions"]),
                       games=int(r["games"]), loss=_float_or_none(r["loss"]), elo=float(r["elo"]),
                       elo_lower=float(r["elo_lower"]), elo_upper=float(r["elo_upper"]),
                       score_vs_random=float(r["score_vs_random"]),
                       mates_search=_float_or_none(r["mates_search"]),
                       mates_policy=_float_or_none(r["mates_policy"]), seconds=float(r["seconds"]),
                       policy_elo=_float_or_none(r.get("policy_elo")),
                       policy_elo_lower=_float_or_none(r.get("policy_elo_lower")),
                       policy_elo_upper=_float_or_none(r.get("policy_elo_upper")),
                       policy_score_vs_random=_float_or_none(r.get("policy_score_vs_random")),
                       mate_puzzles=_int_or_none(r.get("mate_puzzles")),
                       policy_mate_puzzles=_int_or_none(r.get("policy_mate_puzzles")),
                       **{f: _float_or_none(r.get(f)) for f in PROBE_FIELDS})
            for r in rows]


def read_games(path: Path) -> list[tuple[int, GameResult]]:
    """games.csv -> (step evaluated, GameResult) per game."""
    if not path.exists():
        return []
    with open(path) as f:
        return [(int(r["step"]), GameResult(r["white"], r["black"], float(r["score"])))
                for r in csv.DictReader(f)]


def append_csv(path: Path, fields: tuple[str, ...], rows: list[dict]) -> None:
    """Appends rows; a file written with other columns (an older version's) is first rewritten with
    `fields`, its missing columns empty, so a resumed run never misaligns its columns."""
    if path.exists():
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            old_rows = list(reader) if tuple(reader.fieldnames or ()) != fields else None
        if old_rows is not None:
            tmp = path.with_suffix(".tmp")
            with open(tmp, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=fields, restval="", extrasaction="ignore")
                writer.writeheader()
                writer.writerows(old_rows)
            tmp.replace(path)
    new = not path.exists()
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        if new:
            writer.writeheader()
        writer.writerows(rows)


def report_row(report: EvalReport) -> dict:
    """One ratings.csv row."""
    return {k: getattr(report, k) for k in RATINGS_FIELDS}
