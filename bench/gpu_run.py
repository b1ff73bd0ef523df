"""The real run for N minutes, and the same setting benched without Ray: one JSON object.

    python bench/gpu_run.py --config configs/chess_gpu.yaml --minutes 8
    python bench/gpu_run.py --config configs/chess_cpu.yaml --minutes 2 --set actors.games_per_actor=1024 \\
        learner.batch_size=1024 evaluation.enabled=false

First `selfplay.py`'s run itself (selfplay/run.py: Ray actors, replay, the learner, the evaluator as
the config says) for --minutes into a fresh run directory under --runs-dir; then, in this process
with Ray stopped, one actor's ply loop and the learner's step alone (bench/selfplay.py's
`bench_config`) for the same config. Prints (stdout, one JSON object; progress on stderr):

  run    positions/s after its first minute (of finished games, and searched: the ratio below reads
         the searched, which a short run's games in flight do not hold back), GPU busy % (NVML) after its first minute, peak GPU
         memory, the learner's samples/s while it trains, the share of that time spent waiting for
         replay batches, the achieved train ratio against the configured one, the run summary
  bench  one actor's positions/s for the same games per actor, where its ply goes (network / env /
         tree), the learner step's samples/s for the same network and batch
  ratios the run's positions/s over num_actors x the bench's (1.0: the run loses nothing to Ray,
         replay and the learner beside it), the learner's in-run rate over its step's bench rate

The issue's goals read off it: positions/s, `gpu_busy_after_first_minute` >= 80, `train_ratio_of_configured`
>= 0.95, `learner_over_bench` >= 0.5, `run_over_bench` >= 0.9 for one actor.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from runtime import share_driver_gpu  # noqa: E402


def log(**fields) -> None:
    print(json.dumps(fields), file=sys.stderr, flush=True)


def run_figures(cfg) -> dict:
    """Runs the real run; its summary and the figures the goals read."""
    from selfplay.run import run
    t0 = time.monotonic()
    with contextlib.redirect_stdout(sys.stderr):  # the run's progress lines: stdout keeps the one JSON object
        summary = run(cfg, show_progress=False)
    learner, gpus = summary.learner_figures, summary.gpus
    figures = {
        "wall_s": round(time.monotonic() - t0, 1),
        "positions_per_s": round(summary.positions_per_s, 1),
        "positions_per_s_after_first_minute": summary.positions_per_s_after_first_minute
        and round(summary.positions_per_s_after_first_minute, 1),
        "plies_searched_per_s_after_first_minute": summary.plies_searched_per_s_after_first_minute
        and round(summary.plies_searched_per_s_after_first_minute, 1),
        "gpu": gpus and gpus.names[0],
        "gpu_busy_mean": gpus and gpus.busy_mean,
        "gpu_busy_after_first_minute": gpus and gpus.busy_mean_after_first_minute,
        "gpu_memory_peak_gb": gpus and gpus.memory_peak_gb,
        "learner_samples_per_s_training": learner and round(learner.samples_per_s_training, 1),
        "learner_batch_wait_share": learner and learner.seconds_training
        and round(learner.seconds_waiting_for_batches / learner.seconds_training, 3),
        "train_ratio": learner and round(learner.train_ratio, 3),
        "train_ratio_configured": cfg.learner.train_ratio,
        "train_ratio_of_configured": learner and round(learner.train_ratio / cfg.learner.train_ratio, 3),
        "summary": dataclasses.asdict(summary),
    }
    log(part="run", **{k: v for k, v in figures.items() if k != "summary"})
    return figures


def bench_figures(config: str, overrides: list[str], plies: int, train_steps: int) -> dict:
    """One actor's ply loop and the learner step alone, for the same config (no Ray)."""
    from bench.selfplay import bench_config
    return bench_config(os.path.splitext(os.path.basename(config))[0], overrides, plies, train_steps, config)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True, help="self-play preset, e.g. configs/chess_gpu.yaml")
    p.add_argument("--set", dest="overrides", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="dotted overrides, as for selfplay.py")
    p.add_argument("--minutes", type=float, default=3.0, help="the run's max_minutes")
    p.add_argument("--runs-dir", default=None, help="parent of the run directory (default: a temporary one)")
    p.add_argument("--name", default="gpu_run", help="the run's name under --runs-dir")
    p.add_argument("--plies", type=int, default=5, help="timed plies of the ply-loop bench")
    p.add_argument("--train-steps", type=int, default=20, help="timed steps of the learner-step bench")
    p.add_argument("--no-bench", action="store_true", help="the run alone")
    args = p.parse_args()
    share_driver_gpu(args.config, args.overrides)  # before pgx (imported with the config) starts JAX's GPU backend
    from configs import ConfigError, load
    from selfplay import SelfPlayConfig
    runs_dir = args.runs_dir or tempfile.mkdtemp(prefix="gpu_run_")
    overrides = args.overrides + [f"max_minutes={args.minutes}", f"runs_dir={runs_dir}", f"name={args.name}"]
    try:
        cfg = load(SelfPlayConfig, args.config, overrides)
    except ConfigError as e:
        p.exit(2, f"bench/gpu_run.py: config error: {e}\n")
    from runtime import enable_compilation_cache
    enable_compilation_cache()
    result: dict = {"config": args.config, "overrides": args.overrides, "minutes": args.minutes,
                    "run_dir": os.path.join(runs_dir, args.name), "num_actors": cfg.actors.num_actors,
                    "games_per_actor": cfg.actors.games_per_actor, "learner_batch": cfg.learner.batch_size}
    try:
        result["run"] = run_figures(cfg)
    except Exception as e:  # keep what the bench can still measure
        result["run_error"] = f"{type(e).__name__}: {e}"[:500]
    except KeyboardInterrupt:  # SIGTERM or Ctrl-C past the run's own handling: the JSON still comes, without the bench
        result["run_error"], args.no_bench = "interrupted", True
    if not args.no_bench:
        try:
            result["bench"] = bench_figures(args.config, args.overrides, args.plies, args.train_steps)
        except Exception as e:
            result["bench_error"] = f"{type(e).__name__}: {e}"[:500]
    run, bench = result.get("run"), result.get("bench")
    if run and bench:
        warm = (run["plies_searched_per_s_after_first_minute"] or run["positions_per_s_after_first_minute"]
                or run["positions_per_s"])
        result["run_over_bench"] = round(warm / (cfg.actors.num_actors * bench["positions_per_s"]), 3)
        if run["learner_samples_per_s_training"]:
            result["learner_over_bench"] = round(run["learner_samples_per_s_training"]
                                                 / bench["learner_samples_per_s"], 3)
    import jax
    result["device"] = jax.devices()[0].device_kind
    result["load_average_1min"] = os.getloadavg()[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
