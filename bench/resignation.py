"""How often a run's resignations were wrong, at its threshold and at the one AlphaGo Zero's rule picks, as JSON.

    .venv/bin/python bench/resignation.py runs/chess_cpu
    .venv/bin/python bench/resignation.py runs/chess_cpu --target 0.05 --png runs/chess_cpu/resignation.png

Reads the run's never-resign games (`actors.resign_disabled_fraction` of them: they play to the end) from
its replay directory, oldest first, and rebuilds each ply's resign score (actors/resignation.py) from
the record: the root value and the best Q among the searched moves (a record stores 0 for a move the
search did not visit, so a move counts as searched where its Q is not 0). Plies before
`actors.resign_min_plies` or played by parameters older than `actors.resign_after_version` (the record's
versions, interpolated over its plies) may not resign. For every candidate threshold it counts who would
have resigned first and whether that player then lost; it replays the threshold's tuner
(`actors.resign_false_positive_target`) over the games in order; and it reports both the run's threshold
and the tuner's last with their false-positive rates (95% Wilson intervals). One JSON object; with
`--png` a picture of the rate against the threshold and the tuner's path.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHOWN = np.round(np.arange(-1.0, 0.01, 0.05), 2)  # the thresholds listed in the JSON


def record_scores(record, min_plies: int, after_version: int) -> np.ndarray:
    """[T] one record's resign score per ply (+inf where resignation was not allowed)."""
    offsets, versions = record.offsets(), record.versions()
    scores = np.full(record.plies, np.inf, np.float32)
    for t in range(record.plies):
        if t < min_plies or versions[t] < after_version:
            continue
        q, v = record.child_q[offsets[t]:offsets[t + 1]], float(record.root_value[t])
        searched = q[q != 0]
        scores[t] = max(v, float(searched.max())) if searched.size else v
    return scores


def never_resign_games(replay_dir: Path, min_plies: int, after_version: int) -> tuple[list, dict]:
    """The never-resign games as (scores, to_play, rewards), oldest first, and counts: all games, those
    resigned, and the actors' own verdicts in the never-resign games at the thresholds they used (what
    the scores rebuilt here should agree with at the run's threshold)."""
    from replay import read_all

    games, counts = [], {"games": 0, "resigned_games": 0, "actors_would_resign": 0, "actors_false_positives": 0}
    for record in sorted(read_all(replay_dir), key=lambda r: r.created):
        counts["games"] += 1
        counts["resigned_games"] += record.resigned
        if record.resign_disabled:
            games.append((record_scores(record, min_plies, after_version), record.to_play.astype(np.int64),
                          record.rewards))
            counts["actors_would_resign"] += record.resign_would_have >= 0
            counts["actors_false_positives"] += record.resign_false_positive()
    return games, counts


def rate_at(resigned: np.ndarray, false: np.ndarray, threshold: float, candidates: np.ndarray) -> dict:
    """Would-be resignations, false positives and their share (95% Wilson interval) at `threshold`,
    from the per-candidate counts (actors.resignation.counts)."""
    from arena import probe

    k = int(np.argmin(np.abs(candidates - threshold)))
    n, f = int(resigned[k]), int(false[k])
    low, high = probe.wilson(f, n) if n else (0.0, 1.0)
    return {"threshold": float(candidates[k]), "would_resign": n, "false_positives": f,
            "rate": f / n if n else None, "rate_95": [low, high]}


def analyse(run_dir: Path, target: float) -> tuple[dict, tuple[np.ndarray, np.ndarray], list]:
    """The JSON report, the per-candidate counts (would-be resignations [K], false ones [K]) and the
    tuner's path [(game, threshold)]."""
    from actors.resignation import CANDIDATES, ThresholdTuner, classify, counts
    from configs.loader import load
    from selfplay.config import SelfPlayConfig

    cfg = load(SelfPlayConfig, run_dir / "config.yaml")
    a = cfg.actors
    games, totals = never_resign_games(run_dir / "replay", a.resign_min_plies, a.resign_after_version)
    if not games:
        raise SystemExit(f"{run_dir}: no never-resign games in replay/ (actors.resign_disabled_fraction "
                         f"{a.resign_disabled_fraction:g}); nothing to measure")
    outcomes = np.stack([classify(*g) for g in games])
    resigned, false = counts(outcomes)
    tuner, path = ThresholdTuner(a.resign_threshold, target, a.resign_window_games), []
    for i, g in enumerate(games):
        before = tuner.threshold
        tuner.add(*g)
        if tuner.threshold != before or i == len(games) - 1:
            path.append((i + 1, tuner.threshold))
    report = {
        "run": str(run_dir), "search": cfg.search.policy, **totals, "never_resign_games": len(games),
        "allowed_from": {"ply": a.resign_min_plies, "learner_step": a.resign_after_version},
        "run_threshold": rate_at(resigned, false, a.resign_threshold, CANDIDATES),
        "tuner": {"target": target, "window_games": a.resign_window_games, "path": path,
                  "last": rate_at(resigned, false, tuner.threshold, CANDIDATES)},
        "candidates": [rate_at(resigned, false, t, CANDIDATES) for t in SHOWN],
    }
    return report, (resigned, false), path


def plot(report: dict, resigned: np.ndarray, false: np.ndarray, path: list, png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from actors.resignation import CANDIDATES

    rate = np.where(resigned > 0, false / np.maximum(resigned, 1), np.nan)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.plot(CANDIDATES, 100 * rate, label="false positives (% of would-be resignations)")
    left.plot(CANDIDATES, 100 * resigned / report["never_resign_games"], label="never-resign games that would resign (%)")
    left.axhline(100 * report["tuner"]["target"], ls=":", color="grey", label="target")
    left.axvline(report["run_threshold"]["threshold"], ls="--", color="tab:red", label="the run's threshold")
    left.set_xlabel("resign threshold")
    left.set_ylabel("%")
    left.legend(fontsize=8)
    games, thresholds = zip(*path)
    right.step((0,) + games, (report["run_threshold"]["threshold"],) + thresholds, where="post")
    right.set_xlabel("never-resign games seen")
    right.set_ylabel("tuned threshold")
    fig.suptitle(f"{report['run']}: {report['never_resign_games']} never-resign games")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", type=Path, help="a run directory (runs/<name>: its config.yaml and replay/)")
    p.add_argument("--target", type=float, default=0.05, help="the tuner's false-positive share (AlphaGo Zero 0.05)")
    p.add_argument("--png", type=Path, help="also draw the rate against the threshold and the tuner's path")
    args = p.parse_args(argv)
    if not (args.run / "config.yaml").is_file() or not (args.run / "replay").is_dir():
        raise SystemExit(f"{args.run}: not a run directory (no config.yaml and replay/); give runs/<name>")
    if not 0 < args.target < 1:
        raise SystemExit(f"--target must be in (0, 1), got {args.target:g}")
    report, (resigned, false), path = analyse(args.run, args.target)
    if args.png:
        plot(report, resigned, false, path, args.png)
        report["png"] = str(args.png)
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
