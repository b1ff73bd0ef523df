"""Deep searches: time per search and tree depth with and without stopping at certain edges.

    .venv/bin/python bench/deep_search.py --run runs/connect_four          # a trained network
    .venv/bin/python bench/deep_search.py --simulations 256 800 3200       # untrained preset net

mctx's walk goes on below a terminal node, one new node per visit, so every visit to a won or lost
line lengthens a chain under it; with `search.stop_at_certain` (the default wherever certainty
propagation is on) a walk ends at a certain edge and backs up its exact value. This bench times
both walks on the test-time search of bench/connect_four_strength.py (PUCT, c_init 4, the tree
win check, no noise) for one batch of mid-game positions (`--plies` uniform random plies from the
empty board), and checks that both give the root the same visit counts.

Per cell (simulations x walk): seconds per search (median of `--repeats` after a warm-up),
milliseconds per simulation, the mean over the batch of each tree's deepest node, and for the
pair `speedup` (old seconds / new) and `same_root_visits`. Prints ONE JSON object.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import games  # noqa: E402
import models  # noqa: E402
from configs import load  # noqa: E402
from search import make_search, tree_search  # noqa: E402
from selfplay import SelfPlayConfig  # noqa: E402

PRESET = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs",
                      "connect_four.yaml")


def mid_game(game, batch: int, plies: int, seed: int = 0):
    """[batch] states after `plies` uniform random moves (games that end early stay ended)."""
    rng = np.random.default_rng(seed)
    states = game.init(jax.random.split(jax.random.PRNGKey(seed), batch))
    step = jax.jit(game.step)
    for _ in range(plies):
        legal = np.asarray(game.legal_mask(states))
        moves = [rng.choice(np.flatnonzero(row)) if row.any() else 0 for row in legal]
        states = step(states, jnp.asarray(moves))
    return states


def time_search(search, variables, states, repeats: int):
    out, tree = search(variables, states, jax.random.PRNGKey(0))  # compile + warm-up
    jax.block_until_ready(out.action)
    seconds = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out, tree = search(variables, states, jax.random.PRNGKey(0))
        jax.block_until_ready(out.action)
        seconds.append(time.perf_counter() - t0)
    return statistics.median(seconds), tree


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", default="", help="a connect_four run directory: its config and latest network "
                   "(default: configs/connect_four.yaml and an untrained network)")
    p.add_argument("--simulations", type=int, nargs="+", default=[256, 800])
    p.add_argument("--batch", type=int, default=50, help="positions searched at once")
    p.add_argument("--plies", type=int, default=10, help="random plies before the searched position")
    p.add_argument("--repeats", type=int, default=3, help="timed searches per cell")
    p.add_argument("--set", dest="overrides", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="override the config (dotted key); the defaults give the test-time search: "
                   "search.policy=puct search.pb_c_init=4")
    args = p.parse_args(argv)
    overrides = ["search.policy=puct", "search.pb_c_init=4"] + args.overrides
    try:
        cfg = load(SelfPlayConfig, os.path.join(args.run, "config.yaml") if args.run else PRESET, overrides)
        network = models.load_evaluation(os.path.join(args.run, "network")) if args.run else None
    except (ValueError, OSError) as e:  # a bad key or value, a missing run or a damaged network
        p.error(str(e))
    game = games.make(cfg.game)
    if cfg.game != "connect_four":
        p.error(f"bench/deep_search.py measures connect four; the run's game is {cfg.game!r}")
    states = mid_game(game, args.batch, args.plies)
    if network is None:
        network = models.load_evaluation(cfg.network, game.spec, seed=1)
    apply_fn, variables = network.evaluate, network.variables
    result = {"bench": "deep_search", "device": jax.devices()[0].device_kind, "cpu_count": os.cpu_count(),
              "load_average_1m": round(os.getloadavg()[0], 2), "run": args.run or None,
              "network_step": network.metadata.get("step") if args.run else "untrained",
              "batch": args.batch, "random_plies": args.plies, "overrides": overrides, "cells": {}}
    for sims in args.simulations:
        cells, visits = {}, {}
        for walk, stop in (("stop_at_certain", True), ("mctx_walk", False)):
            config = dataclasses.replace(cfg.search.for_play(), num_simulations=sims, stop_at_certain=stop)
            search = make_search(game, apply_fn, config, return_tree=True)
            seconds, tree = time_search(search, variables, states, args.repeats)
            visits[walk] = np.asarray(tree.children_visits[:, 0])
            cells[walk] = {"seconds_per_search": round(seconds, 3),
                           "ms_per_simulation": round(1000 * seconds / sims, 2),
                           "mean_max_depth": round(float(tree_search.deepest_node(np.asarray(tree.parents)).mean()), 1)}
            print(f"{sims} {walk}: {json.dumps(cells[walk])}", file=sys.stderr, flush=True)
        cells["speedup"] = round(cells["mctx_walk"]["seconds_per_search"]
                                 / cells["stop_at_certain"]["seconds_per_search"], 2)
        cells["same_root_visits"] = bool(np.array_equal(visits["stop_at_certain"], visits["mctx_walk"]))
        result["cells"][str(sims)] = cells
    print(json.dumps(result))


if __name__ == "__main__":
    main()
