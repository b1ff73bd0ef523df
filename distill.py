"""Searchless students: annotate boards with Stockfish, train AV/SV/BC students, evaluate them.

    python distill.py annotate --config configs/distill_cpu.yaml
    python distill.py train    --config configs/distill_cpu.yaml --set data.target=bc train.out_dir=runs/distill/bc
    python distill.py evaluate --config configs/distill_cpu.yaml --set evaluate.net=runs/distill/bc
    python distill.py evaluate --config configs/distill_cpu.yaml --set evaluate.player=stockfish:nodes=500
    python distill.py warm-start --config configs/distill_cpu.yaml   # the self-play ResNet, for init.network
    python distill.py calibrate --config configs/distill_cpu.yaml --set calibrate.network=DIR  # its value's side-to-move offset removed

`train` writes the training state (train.out_dir/state/, resumable) and the student's network
directory (train.out_dir/student/), which arena plays as `av:/sv:/bc:net=DIR` agents.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from configs import ConfigError, load
from distill import DistillConfig


def _annotate(cfg: DistillConfig) -> dict:
    from distill.annotate import annotate
    from distill.boards import puzzle_ids, sample_boards
    from runtime import data_file

    a = cfg.annotate
    sources = [data_file(p) for p in (*a.pgn, *a.positions)]
    held_out = puzzle_ids(data_file(cfg.evaluate.puzzles)) if any(s.suffix == ".csv" for s in sources) else frozenset()
    boards = sample_boards(sources, a.sampler, a.seed, a.max_boards, exclude_puzzles=held_out)
    print(f"annotate: {len(boards)} boards from {len(sources)} sources", file=sys.stderr)
    out = annotate(boards, a.out_dir, engine_path=a.engine, workers=a.num_workers,
                   nodes_per_move=a.nodes_per_move, time_per_move=a.time_per_move,
                   shard_size=a.shard_size)
    # one line per (resumed) run, beside the shards: what bench/distill.py reports as boards/minute
    with open(Path(a.out_dir) / "annotate_runs.jsonl", "a") as f:
        f.write(json.dumps({**out, "workers": a.num_workers, "nodes_per_move": a.nodes_per_move,
                            "time_per_move": a.time_per_move}) + "\n")
    return out


def _train(cfg: DistillConfig) -> dict:
    from distill.train import train
    return train(cfg)


def _evaluate(cfg: DistillConfig) -> dict:
    from distill.evaluate import evaluate
    return evaluate(cfg)


def _warm_start(cfg: DistillConfig) -> dict:
    from distill.warm_start import warm_start
    return warm_start(cfg)


def _calibrate(cfg: DistillConfig) -> dict:
    from distill.calibrate import calibrate
    return calibrate(cfg)


COMMANDS = {"annotate": _annotate, "train": _train, "evaluate": _evaluate, "warm-start": _warm_start,
            "calibrate": _calibrate}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=sorted(COMMANDS))
    parser.add_argument("--config", default=None, help="YAML preset, e.g. configs/distill_cpu.yaml")
    parser.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                        help="dotted overrides, e.g. --set train.max_steps=100 target=bc (repeatable)")
    args = parser.parse_args(argv)
    from learner import CheckpointError  # train's and warm-start's: no readable state to resume
    try:
        cfg = load(DistillConfig, args.config, args.set)
        from runtime import enable_compilation_cache, expose_cpu_cores
        if args.command == "train":
            expose_cpu_cores()  # train.devices=0 then splits each batch over the cores
        enable_compilation_cache()
        result = COMMANDS[args.command](cfg)
    except (ConfigError, FileNotFoundError, ValueError, CheckpointError) as e:
        print(f"distill.py {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"distill.py {args.command}: interrupted (finished work is kept; rerun to resume)",
              file=sys.stderr)
        return 130
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    from runtime import stop_on_signals
    stop_on_signals()
    sys.exit(main())
