"""Distillation throughput and quality: annotation boards/minute, training steps/second, and the
evaluation reports of the evidence runs (students vs random and Stockfish baselines).

    .venv/bin/python bench/distill.py                          # measure + collect runs/distill/*
    .venv/bin/python bench/distill.py --boards 100 --steps 30 --runs runs/distill

Annotation: `--boards` boards of the preset's PGNs annotated into a temporary directory at the
preset's Stockfish limit (one engine worker, as the preset). Training: `--steps` steps of the CPU
preset's students (`--targets`, default av, av_all and bc) on the preset's records (steps/s after
the first, compiling, step; `move_values_per_second`: the (board, move) values an AV or AV-all
student learns per second).
Runs: the annotation runs of the preset's out_dir (`annotate_runs.jsonl`), every `*/train.json` (steps/s of the evidence trainings) and `eval_*.json` (written by
`distill.py evaluate`: action accuracy, Kendall's tau, puzzle accuracy) under `--runs`.
Training runs as `distill.py train` does, each batch split over the cores (`train.devices`;
`--set train.devices=1` for one device). Training also reports the flops of one step (XLA's cost
analysis of the step as lowered: the same count on every device), the achieved GFLOP/s, and that as a share of the machine's float32 matmul rate (`matmul_gflops_per_s`, a 2048^3 jitted matmul).
Prints ONE JSON object.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from configs import load  # noqa: E402
from distill import DistillConfig  # noqa: E402
from runtime import data_file  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def bench_annotation(cfg, boards: int) -> dict:
    from distill.annotate import annotate
    from distill.boards import sample_boards

    a = cfg.annotate
    todo = sample_boards([data_file(p) for p in a.pgn], a.sampler, seed=12345, max_boards=boards)
    with tempfile.TemporaryDirectory() as tmp:
        out = annotate(todo, tmp, engine_path=a.engine, workers=a.num_workers,
                       nodes_per_move=a.nodes_per_move, time_per_move=a.time_per_move,
                       show_progress=False)
    return {"boards": out["new"], "seconds": round(out["seconds"], 2),
            "boards_per_minute": round(out["boards_per_minute"], 1), "workers": a.num_workers,
            "nodes_per_move": a.nodes_per_move, "time_per_move": a.time_per_move}


def bench_training(cfg, target: str, steps: int) -> dict:
    from distill.train import train

    with tempfile.TemporaryDirectory() as tmp:
        run = dataclasses.replace(
            cfg, data=dataclasses.replace(cfg.data, target=target),
            train=dataclasses.replace(cfg.train, out_dir=tmp, max_steps=steps, max_seconds=0.0,
                                      checkpoint_every=10**9, progress=False))
        out = train(run)
    return {k: out[k] for k in ("steps", "steps_per_second", "examples_per_second",
                                "move_values_per_second", "batch_size", "devices", "train_boards",
                                "train_pairs")}


def matmul_gflops(n: int = 2048, repeats: int = 10) -> float:
    """The machine's reference rate: a float32 [n, n] x [n, n] matmul (2 n^3 flops), jitted."""
    import jax
    import jax.numpy as jnp

    a = jax.random.normal(jax.random.PRNGKey(0), (n, n), jnp.float32)
    mm = jax.jit(lambda x: x @ x)
    mm(a).block_until_ready()
    start = time.perf_counter()
    for _ in range(repeats):
        out = mm(a)
    out.block_until_ready()
    return 2 * n**3 * repeats / (time.perf_counter() - start) / 1e9


def step_gflop(cfg, target: str, compiled: bool = False) -> float:
    """Flops of one training step of the preset's student: XLA's cost analysis of the step as lowered,
    before the backend's passes, so the same count on every device (the compiled module's analysis,
    `compiled=True`, leaves out the matmuls a GPU backend hands to its libraries)."""
    import numpy as np

    from distill import RecordStore, dataset, student
    from distill.train import _jnp, initial_state, make_optimizer, make_step
    from models import make_student

    net_cfg = student.network_config(cfg.student, target)
    module = make_student(net_cfg)
    tx = make_optimizer(cfg.train)
    state = initial_state(module, net_cfg, target, tx, seed=0)
    store = RecordStore(cfg.data.records)
    examples = dataset.load_examples(store, store.split("train", cfg.data.test_fraction)[:200])
    batch = dataset.sample_batch(examples, target, np.random.default_rng(0), cfg.train.batch_size,
                                 net_cfg.family, cfg.data.sampler, cfg.data.bc_soft)
    batch = _jnp(batch)
    step = make_step(module, net_cfg, target, cfg.train.loss, tx, cfg.train.ema_decay, cfg.train.best_move_weight)
    lowered = step.lower(state, batch)
    cost = lowered.compile().cost_analysis() if compiled else lowered.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    return float(cost["flops"]) / 1e9


def collect_reports(runs: Path) -> dict:
    keep = ("action_accuracy", "kendall_tau", "puzzle_accuracy", "boards", "tau_boards", "puzzles",
            "bands")
    out = {}
    for path in sorted(runs.glob("**/eval_*.json")):
        report = json.loads(path.read_text())
        name = f"{path.parent.name}/{report.get('player', path.stem)}"
        out[name] = {k: report.get(k) for k in keep} | {"file": str(path)}
    return out


def collect_annotation_runs(records: Path) -> list:
    path = records / "annotate_runs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def collect_training(runs: Path) -> dict:
    keep = ("target", "steps", "seconds", "steps_per_second", "examples_per_second",
            "move_values_per_second", "batch_size", "train_boards", "train_pairs", "final_train_loss",
            "test_loss_ema")
    return {path.parent.name: {k: json.loads(path.read_text()).get(k) for k in keep} | {"file": str(path)}
            for path in sorted(runs.glob("*/train.json"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "configs" / "distill_cpu.yaml"))
    parser.add_argument("--boards", type=int, default=200, help="boards to annotate (0: skip)")
    parser.add_argument("--steps", type=int, default=50, help="training steps per target (0: skip)")
    parser.add_argument("--targets", default="av,av_all,bc", help="students to time, comma-separated")
    parser.add_argument("--runs", default=str(ROOT / "runs" / "distill"), help="evaluation reports")
    parser.add_argument("--set", nargs="*", default=[], help="config overrides")
    args = parser.parse_args()
    from runtime import expose_cpu_cores
    expose_cpu_cores()  # as distill.py train: train.devices=0 splits each batch over the cores
    cfg = load(DistillConfig, args.config, args.set)
    result = {"config": os.path.relpath(args.config, ROOT), "cpu_count": os.cpu_count(),
              "load_average_1min": os.getloadavg()[0], "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if args.boards:
        result["annotation"] = bench_annotation(cfg, args.boards)
    if args.steps:
        if Path(cfg.data.records).is_dir():
            result["training"] = {t: bench_training(cfg, t, args.steps) for t in args.targets.split(",")}
            result["matmul_gflops_per_s"] = round(matmul_gflops(), 1)
            for t, out in result["training"].items():
                flops = step_gflop(cfg, t)
                out["gflop_per_step"] = round(flops, 3)
                out["gflops_per_s"] = round(flops * out["steps_per_second"], 1)
                out["share_of_matmul_rate"] = round(out["gflops_per_s"] / result["matmul_gflops_per_s"], 3)
        else:
            result["training"] = {"skipped": f"no records at {cfg.data.records}: run distill.py annotate"}
    result["annotation_runs"] = collect_annotation_runs(Path(cfg.annotate.out_dir))
    result["training_runs"] = collect_training(Path(args.runs))
    result["evaluations"] = collect_reports(Path(args.runs))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
