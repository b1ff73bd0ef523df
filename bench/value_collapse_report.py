"""The collapse A/B's table and picture: one row per arm over its seeds, from bench/value_collapse.py's JSONs.

    .venv/bin/python bench/value_collapse_report.py runs/value_collapse/ab --png runs/value_collapse/ab.png

Reads every `<arm>-<seed>.json` in the folder (one harness run each, the arm's name free of '-'
before the seed). An arm's run keeps its head alive when the health check never fired and the value's
std (a 100-step mean, train mode) stayed above `--floor` from step `health_min_steps` to the end. The
floor defaults to the H200 network's untrained figure (0.026, inference mode, the issue's bar): the
harness's own untrained figure (train mode, ~0.25) is not one a head fitting mostly drawn games can
keep, nor needs to. Prints one JSON object: per arm, the seeds alive, and per seed the collapse step,
the std's minimum after the start and at the end, the share of the outcomes' variance explained at the
end, the value BatchNorm's scale and bias at the end. With --png, the value std and explained share
over the steps, one line per run, a colour per arm. With --markdown, a table instead of the JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

H200_UNTRAINED_STD = 0.026  # the GPU run's untrained value std (docs/experiments/2026-11-27-one-gpu-h200.md)


@dataclass(frozen=True)
class SeedRow:
    seed: int
    alive: bool
    collapse_step: int | None
    std_min: float  # after health_min_steps
    std_end: float
    explained_end: float
    bn_scale_end: float
    bn_bias_end: float


def seed_row(seed: int, run: dict, floor: float) -> SeedRow:
    series = run["series"]
    after = [p["value_std"] for p in series if p["step"] > run["settings"]["health_min_steps"]]
    std_min = min(after) if after else float("nan")
    end = series[-1]
    return SeedRow(seed=seed, alive=not run["collapsed"] and std_min > floor, collapse_step=run["collapse_step"],
                   std_min=std_min, std_end=end["value_std"], explained_end=end.get("value_explained", float("nan")),
                   bn_scale_end=end["value_bn_scale"], bn_bias_end=end["value_bn_bias"])


def load_runs(folder: Path) -> dict[str, dict[int, dict]]:
    """{arm: {seed: run}} from `<arm>-<seed>.json`; a file that is not a finished run is named and skipped."""
    runs: dict[str, dict[int, dict]] = {}
    for path in sorted(folder.glob("*.json")):
        arm, _, seed = path.stem.rpartition("-")
        if not arm or not seed.isdigit():
            continue  # not a run's file (a report written beside them)
        try:
            run = json.loads(path.read_text())
        except ValueError as e:
            _skip(path, f"{type(e).__name__}: {e}")
            continue
        if run.get("series"):
            runs.setdefault(arm, {})[int(seed)] = run
        else:
            _skip(path, "no series")
    return runs


def _skip(path: Path, why: str) -> None:
    print(f"skipped {path.name}: {why}", file=sys.stderr)


def report(runs: dict[str, dict[int, dict]], floor: float) -> dict:
    arms = {}
    for arm, seeds in runs.items():
        rows = [seed_row(s, seeds[s], floor) for s in sorted(seeds)]
        arms[arm] = {"alive": f"{sum(r.alive for r in rows)}/{len(rows)}", "seeds": [asdict(r) for r in rows]}
    return {"floor": floor, "arms": arms}


def markdown(table: dict) -> str:
    """The report as a Markdown table, a row per arm (seeds' figures joined by ' / ')."""
    def join(rows, key, fmt):
        return " / ".join("-" if r[key] is None else format(r[key], fmt) for r in rows)
    lines = ["| arm | alive | collapse step | std min after start | std at end | explained at end | BN scale / bias at end |",
             "|---|---|---|---|---|---|---|"]
    for arm, a in table["arms"].items():
        rows = a["seeds"]
        bn = " / ".join(f"{r['bn_scale_end']:+.2f}, {r['bn_bias_end']:+.2f}" for r in rows)
        lines.append(f"| {arm} | {a['alive']} | {join(rows, 'collapse_step', 'd')} | {join(rows, 'std_min', '.2g')} | "
                     f"{join(rows, 'std_end', '.2g')} | {join(rows, 'explained_end', '.2f')} | {bn} |")
    return "\n".join(lines)


def plot(runs: dict[str, dict[int, dict]], floor: float, png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_std, ax_exp) = plt.subplots(1, 2, figsize=(12, 4.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (arm, seeds) in enumerate(sorted(runs.items())):
        for j, seed in enumerate(sorted(seeds)):
            steps = [p["step"] for p in seeds[seed]["series"]]
            label = arm if j == 0 else None
            c = colours[i % len(colours)]
            ax_std.plot(steps, [max(p["value_std"], 1e-10) for p in seeds[seed]["series"]], color=c, label=label, alpha=0.8)
            ax_exp.plot(steps, [p.get("value_explained", float("nan")) for p in seeds[seed]["series"]], color=c, label=label, alpha=0.8)
    ax_std.axhline(floor, color="k", ls="--", lw=1, label=f"floor {floor}")
    ax_std.set(yscale="log", xlabel="learner step", ylabel="value std (train mode, 100-step mean)",
               title="spread of the value (0 drawn at 1e-10)")
    ax_exp.axhline(0, color="k", lw=0.5)
    ax_exp.set(xlabel="learner step", ylabel="share of the outcome's variance explained",
               title="what the value explains")
    ax_std.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("folder", type=Path, help="where the harness's <arm>-<seed>.json files are")
    p.add_argument("--floor", type=float, default=H200_UNTRAINED_STD, help="the value std an alive head keeps")
    p.add_argument("--png", type=Path, help="also draw the runs here")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table instead of the JSON")
    args = p.parse_args(argv)
    if not args.folder.is_dir():
        print(f"error: {args.folder} is not a folder; give the one the harness's JSONs were written to", file=sys.stderr)
        return 2
    runs = load_runs(args.folder)
    if not runs:
        print(f"error: no <arm>-<seed>.json runs in {args.folder}; run bench/value_collapse.py first", file=sys.stderr)
        return 2
    table = report(runs, args.floor)
    print(markdown(table) if args.markdown else json.dumps(table, indent=1))
    if args.png:
        plot(runs, args.floor, args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
