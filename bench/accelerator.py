"""Accelerator throughput at the batch sizes a GPU needs: search sims/s and the learner step.

    python bench/accelerator.py                      # on a GPU node (JAX sees the GPU)
    python bench/accelerator.py --batches 64 --presets chess_cpu --learner-batch 64 --repeats 1   # a CPU smoke run

Search: chess positions after 8 random plies, the chess_cpu ResNet (2x32, untrained), 32
simulations, PUCT and Gumbel, `win_check` root (self-play's setting) or as --win-checks says. Learner: the real jitted
train step (learner/train.py: SGD + momentum, legal-move policy loss, value loss) on random
batches of chess observations, per network preset and per `--learner-devices` count (the batch
split over that many devices, learner/parallel.py: 0 = all, e.g. every GPU of the node), per
`--dtypes` (the ResNet's `compute_dtype`: bfloat16 runs convolutions in bf16, float32 parameters). Prints one JSON line per measurement as it
goes (a killed run keeps what it measured), then nothing else.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import games  # noqa: E402
import models  # noqa: E402
import search  # noqa: E402
from learner import (  # noqa: E402  # noqa: E402
    LearnerConfig,  # noqa: E402
    data_parallel,
    describe,
    init_train_state,
    make_train_step,
)
from models import presets  # noqa: E402
from replay import TrainingBatch  # noqa: E402
from search import SearchConfig  # noqa: E402

CHESS = games.make("chess")
CPU_NET = models.NetworkConfig(family="resnet", resnet=models.ResNetConfig(num_blocks=2, filters=32,
                                                                           value_hidden=64))


def emit(**record) -> None:
    record["device"] = str(jax.devices()[0].device_kind)
    print(json.dumps(record), flush=True)


def positions(batch: int, plies: int = 8):
    states = CHESS.init(jax.random.split(jax.random.PRNGKey(0), batch))
    step = jax.jit(CHESS.step)
    key = jax.random.PRNGKey(1)
    for _ in range(plies):
        key, k = jax.random.split(key)
        states = step(states, jax.random.categorical(k, jnp.where(CHESS.legal_mask(states), 0.0, -jnp.inf)))
    return states


def timed(fn, repeats: int) -> tuple[float, float]:
    """(compile + first call seconds, median seconds of `repeats` calls)."""
    start = time.perf_counter()
    jax.block_until_ready(fn(0))
    first = time.perf_counter() - start
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(i + 1))
        times.append(time.perf_counter() - start)
    return first, float(np.median(times))


def with_dtype(net_cfg: models.NetworkConfig, dtype: str) -> models.NetworkConfig:
    return dataclasses.replace(net_cfg, resnet=dataclasses.replace(net_cfg.resnet, compute_dtype=dtype))


def bench_search(batches, sims: int, repeats: int, win_check: str = "root", dtype: str = "float32") -> None:
    network = models.load_evaluation(with_dtype(CPU_NET, dtype), CHESS.spec, seed=0)
    evaluate, variables = network.evaluate, network.variables
    states = positions(max(batches))
    for policy in ("puct", "gumbel"):
        run = search.make_search(CHESS, evaluate, SearchConfig(
            policy=policy, num_simulations=sims, win_check=win_check, max_num_considered_actions=8))
        for batch in batches:
            sub = jax.tree.map(lambda x: x[:batch], states)
            first, seconds = timed(lambda i: run(variables, sub, jax.random.PRNGKey(i)), repeats)
            emit(kind="search", policy=policy, win_check=win_check, dtype=dtype, batch=batch, simulations=sims,
                 sims_per_s=round(batch * sims / seconds, 1), positions_per_s=round(batch / seconds, 1),
                 seconds_per_search=round(seconds, 4), compile_s=round(first - seconds, 1))


def bench_learner(names, batch: int, repeats: int, device_counts=(1,), dtypes=("float32",)) -> None:
    rng = np.random.default_rng(0)
    width = CHESS.max_legal_actions
    legal = np.full((batch, width), -1, np.int32)
    legal[:, :32] = np.sort(rng.choice(CHESS.num_actions, size=(batch, 32)), axis=1)
    policy = np.zeros((batch, width), np.float32)
    policy[:, :32] = rng.dirichlet(np.ones(32), size=batch)
    data = TrainingBatch(observation=jnp.asarray(rng.random((batch, *CHESS.observation_shape), np.float32)),
                         legal_actions=jnp.asarray(legal), policy=jnp.asarray(policy),
                         z=jnp.asarray(rng.choice([-1.0, 0.0, 1.0], size=batch).astype(np.float32)))
    cfg = LearnerConfig(batch_size=batch)
    for name, count, dtype in ((n, c, d) for n in names for c in device_counts for d in dtypes):
        net_cfg = with_dtype(CPU_NET if name == "chess_cpu" else presets.get(name), dtype)
        net = models.make_network(net_cfg, CHESS.spec)
        replicated, split = data_parallel(count, batch, "learner")
        state = jax.device_put(init_train_state(net, cfg, data.observation[:1], jax.random.PRNGKey(0)), replicated)
        step = make_train_step(net, cfg)
        holder = {"state": state}
        sharded = jax.device_put(data, split)

        def one(_):
            holder["state"], metrics = step(holder["state"], sharded)
            return metrics["loss"]

        first, seconds = timed(one, repeats)
        emit(kind="learner", network=name, dtype=dtype, batch=batch, devices=describe(replicated),
             samples_per_s=round(batch / seconds, 1), seconds_per_step=round(seconds, 4),
             compile_s=round(first - seconds, 1))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", default="256,1024,4096", help="search batch sizes")
    ap.add_argument("--sims", type=int, default=32)
    ap.add_argument("--learner-batch", type=int, default=1024)
    ap.add_argument("--presets", default="chess_cpu,resnet_6x64,az_paper")
    ap.add_argument("--learner-devices", default="1,0",
                    help="comma list of device counts the learner batch is split over (0: all)")
    ap.add_argument("--win-checks", default="root", help="comma list of SearchConfig.win_check values")
    ap.add_argument("--dtypes", default="float32", help="comma list of network compute dtypes: float32, bfloat16")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip", default="", help="comma list: search, learner")
    args = ap.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    dtypes = args.dtypes.split(",")
    if "learner" not in skip:
        counts = list(dict.fromkeys(int(c) or len(jax.devices()) for c in args.learner_devices.split(",")))
        bench_learner(args.presets.split(","), args.learner_batch, args.repeats, counts, dtypes)
    if "search" not in skip:
        for win_check, dtype in ((w, d) for w in args.win_checks.split(",") for d in dtypes):
            bench_search([int(b) for b in args.batches.split(",")], args.sims, args.repeats, win_check, dtype)


if __name__ == "__main__":
    main()
