"""Self-play training (AlphaZero) on Ray: `python selfplay.py --config configs/chess_cpu.yaml`.

    python selfplay.py --config configs/tic_tac_toe.yaml --set learner.max_steps=500 --set name=ttt1
    python selfplay.py --config configs/chess_cpu.yaml --resume           # continue runs/chess_cpu
    python selfplay.py --config configs/chess_az.yaml --ray-address auto  # an existing Ray cluster

Files go to runs/<name>/: config.yaml, checkpoints/, network/, replay/, tb/, games.pgn, corpus/, summary.json.
Ctrl-C stops after saving a checkpoint; `--resume` continues from it. The run itself is selfplay/run.py.
At its end the run's summary (RunSummary, selfplay/messages.py) goes to runs/<name>/summary.json as
JSON and a few lines to stdout: what the run made, its last evaluation, its network directory and the
commands that play and resume it (`--json`: the JSON instead, one line). An error on start (a damaged
file with --set replay.strict=true, no readable checkpoint, a config that differs from the run's on
--resume, a full disk) is one line on stderr naming the problem and the fix, exit status 2.
"""
from __future__ import annotations

import argparse
import sys


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True, help="YAML preset, e.g. configs/chess_cpu.yaml")
    p.add_argument("--set", dest="overrides", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="override one config value (dotted key), repeatable: --set learner.batch_size=128")
    p.add_argument("--ray-address", default=None, help="Ray cluster address (default: start a local Ray)")
    p.add_argument("--resume", action="store_true", help="continue runs/<name>/ from its last checkpoint")
    p.add_argument("--no-progress", action="store_true", help="plain log lines instead of the live table")
    p.add_argument("--json", action="store_true",
                   help="end with the run's summary as one JSON line (as in runs/<name>/summary.json) "
                        "instead of the lines for a person")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    from runtime import share_driver_gpu
    share_driver_gpu(args.config, args.overrides)  # before pgx (imported with the config) starts JAX's GPU backend
    from configs import ConfigError, load
    from selfplay import SelfPlayConfig
    try:
        cfg = load(SelfPlayConfig, args.config, args.overrides)
    except ConfigError as e:
        print(f"selfplay.py: config error: {e}", file=sys.stderr)
        return 2
    from runtime import enable_compilation_cache
    enable_compilation_cache()  # the driver's and (through the environment) the actors' compiles
    # heavy imports only once the config is valid
    from learner import CheckpointError
    from replay import RecordError
    from selfplay.errors import RunError
    from selfplay.prepare import run_dir_of, start_error_line
    from selfplay.run import run
    from selfplay.summary import summary_json, summary_lines, write_summary

    try:
        summary = run(cfg, resume=args.resume, ray_address=args.ray_address,
                      show_progress=False if args.no_progress else None)
    except (RunError, RecordError, CheckpointError) as e:
        print(f"selfplay.py: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a missing or unwritable path, a full disk: one line with the fix
        print(f"selfplay.py: {start_error_line(e)}", file=sys.stderr)
        return 2
    run_dir = run_dir_of(cfg)
    try:
        write_summary(run_dir, summary)
    except OSError as e:  # a full disk at the end: the summary still reaches stdout
        print(f"selfplay.py: summary.json not written: {start_error_line(e)}", file=sys.stderr)
    print(summary_json(summary) if args.json else "\n".join(summary_lines(summary, cfg, run_dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
