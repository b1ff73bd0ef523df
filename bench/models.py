"""Network presets: parameters, forward FLOPs per position (XLA cost analysis), forward time.

    .venv/bin/python bench/models.py                       # every preset
    .venv/bin/python bench/models.py --only resnet_6x64 chessformer_4m --repeats 5

For every preset: `params` and `flops_per_position` (XLA's cost analysis of the jitted forward at
batch 256, divided by 256; no memory is allocated for it). For presets whose forward fits the time
budget here: `seconds_per_position` at batch 1 and 256 (best of --repeats calls after a warm-up),
the achieved FLOP/s and its ratio to this machine's float32 matmul FLOP/s (2048x2048, best of 10,
re-measured before each preset; the best of the run is the reference). Skipped
measurements say why. Inputs: ResNets read pgx chess observations [B, 8, 8, 119]; Chessformers
their 112-feature squares [B, 64, 112] (compact policy); searchless models 78 tokens (AV).
Prints ONE JSON object keyed by preset name (plus "_machine").
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import games  # noqa: E402
import models  # noqa: E402
from models import presets  # noqa: E402

BATCHES = (1, 256)


def module_and_input(name: str, batch: int):
    cfg = presets.get(name)
    if cfg.family == "resnet":
        spec = games.make("chess").spec
        return models.make_network(cfg, spec), jax.ShapeDtypeStruct((batch, *spec.observation_shape), jnp.float32)
    if cfg.family == "searchless":
        return models.make_student(cfg), jax.ShapeDtypeStruct((batch, cfg.searchless.input_length), jnp.int32)
    return models.make_student(cfg), jax.ShapeDtypeStruct((batch, 64, cfg.chessformer.input_features), jnp.float32)


def _flops(compiled_or_lowered) -> float:
    cost = compiled_or_lowered.cost_analysis()
    if isinstance(cost, (list, tuple)):
        cost = cost[0]
    return float(cost["flops"])


def static_figures(name: str):
    """-> ({params, flops_per_position}, the forward compiled for batch 256 (reused for timing))."""
    net, x = module_and_input(name, BATCHES[-1])
    shapes = jax.eval_shape(lambda x: net.init(jax.random.PRNGKey(0), x), x)
    params = sum(int(np.prod(s.shape)) for s in jax.tree.leaves(shapes["params"]))
    compiled = jax.jit(lambda v, x: net.apply(v, x)).lower(shapes, x).compile()
    return {"params": params, "flops_per_position": _flops(compiled) / BATCHES[-1]}, compiled


def _timed(fn, repeats: int) -> float:
    """Best of `repeats` calls after a warm-up: the least disturbed by other processes on the machine."""
    jax.block_until_ready(fn())
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - t0)
    return best


def matmul_flops_per_second(n: int = 2048, repeats: int = 10) -> float:
    a = jax.random.normal(jax.random.PRNGKey(0), (n, n), jnp.float32)
    b = jax.random.normal(jax.random.PRNGKey(1), (n, n), jnp.float32)
    mm = jax.jit(jnp.matmul)
    return 2.0 * n ** 3 / _timed(lambda: mm(a, b), repeats)


def measure(name: str, flops_per_position: float, compiled_big, peak: float, repeats: int,
            max_batch_seconds: float) -> dict:
    """Forward seconds per position at each batch size (achieved FLOP/s; ratios are added later)."""
    out = {}
    net, x1 = module_and_input(name, 1)
    variables = jax.jit(lambda x: net.init(jax.random.PRNGKey(0), x))(jnp.zeros(x1.shape, x1.dtype))
    for batch in BATCHES:
        expected = flops_per_position * batch / peak  # seconds at the matmul rate
        if expected > max_batch_seconds:
            out[f"batch_{batch}"] = f"skipped: ~{expected:.0f} s per call at matmul speed (limit {max_batch_seconds} s)"
            continue
        x = jnp.zeros((batch, *x1.shape[1:]), x1.dtype)
        forward = compiled_big if batch == BATCHES[-1] else jax.jit(lambda v, x: net.apply(v, x))
        seconds = _timed(lambda: forward(variables, x), repeats)
        out[f"batch_{batch}"] = {"seconds_per_position": seconds / batch, "positions_per_second": batch / seconds,
                                 "flops_per_second": flops_per_position * batch / seconds}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="preset names (default: all)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per batch size")
    parser.add_argument("--max-batch-seconds", type=float, default=8.0,
                        help="skip timing a batch whose forward would take longer than this at matmul speed")
    args = parser.parse_args()
    names = args.only or presets.names()
    unknown = [n for n in names if n not in presets.PRESETS]
    if unknown:
        sys.exit(f"unknown preset {unknown[0]} (known: {', '.join(presets.names())})")

    # Other processes share this machine: the matmul rate is re-measured before every preset and
    # the best figure of the run is the reference for all ratios.
    peak = matmul_flops_per_second()
    result = {"_machine": {"device": str(jax.devices()[0].device_kind), "backend": jax.default_backend(),
                           "cpu_count": os.cpu_count(), "load_average_1min_at_start": os.getloadavg()[0]}}
    for name in names:
        t0 = time.perf_counter()
        peak = max(peak, matmul_flops_per_second())
        entry, compiled_big = static_figures(name)
        entry.update(measure(name, entry["flops_per_position"], compiled_big, peak, args.repeats,
                             args.max_batch_seconds))
        entry["bench_seconds"] = time.perf_counter() - t0
        result[name] = entry
        print(f"{name}: done in {entry['bench_seconds']:.0f} s", file=sys.stderr)
    result["_machine"]["matmul_flops_per_second"] = peak
    result["_machine"]["load_average_1min_at_end"] = os.getloadavg()[0]
    for entry in result.values():
        for batch in BATCHES:
            timing = entry.get(f"batch_{batch}")
            if isinstance(timing, dict):
                timing["fraction_of_matmul_flops"] = timing["flops_per_second"] / peak
    print(json.dumps(result, indent=1))

if __name__ == "__main__":
    main()
