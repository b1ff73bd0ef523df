"""Would an NN cache pay on chess? Cache hit rates of self-play searches and the network's share of
search time, for issue 13.3.

    .venv/bin/python bench/nn_cache.py --network runs/soak60/network --games 16 --plies 120
    .venv/bin/python bench/nn_cache.py --config configs/chess_cpu.yaml --network untrained

Plays `--games` chess games in one batch with the preset's self-play search (root noise, the
opening temperature) for `--plies` plies, keeps every search's tree and keys each evaluated node by
its observation's bytes (history planes, repetitions and counters included, so a key seen before is
an exact hit, as lc0's NNCache keys by position and history). Reports, over all evaluations:

- `within_search`: the node's key appeared earlier in the same tree (transpositions in one search);
- `previous_search`: it appeared in the same game's previous search (what reusing the chosen
  child's subtree, or a one-search cache, would save);
- `whole_game`: it appeared anywhere earlier in the same game (an unbounded per-game cache);
- `network_share`: 1 - seconds of the same search with a free network (zero logits and value) over
  seconds with the real one: the part of a search that a hit can save;
- `speedup_bound`: 1 / (1 - whole_game x network_share), the positions/s factor of a perfect cache
  that costs nothing. A batched jitted search only saves when a whole batch hits, so real gains
  are below the bound.
Prints ONE JSON object.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
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
import search  # noqa: E402
from bench import networks  # noqa: E402
from configs.loader import load  # noqa: E402
from selfplay.config import SelfPlayConfig  # noqa: E402


def node_keys(game, tree) -> np.ndarray:
    """[B, nodes] 8-byte keys (uint64) of every tree node's observation; 0 for nodes never expanded."""
    states = tree.embeddings.state
    B, N = tree.node_visits.shape
    flat = jax.tree.map(lambda x: x.reshape((B * N,) + x.shape[2:]), states)
    # the tree keeps states without their observation (search/mcts.py): pgx recomputes it
    observe = jax.jit(jax.vmap(game.env.observe))
    obs = np.asarray(observe(flat)).reshape(B, N, -1)
    keys = np.array([[int.from_bytes(hashlib.blake2b(obs[b, n].tobytes(), digest_size=8).digest(), "little")
                      for n in range(N)] for b in range(B)], dtype=np.uint64)
    return np.where(np.asarray(tree.node_visits) > 0, keys, np.uint64(0))


def count_hits(per_ply_keys: list[np.ndarray], alive: list[np.ndarray]) -> dict:
    """Hit counts over a game's searches: `per_ply_keys[t]` [B, nodes] (0 = not evaluated),
    `alive[t]` [B] whether game b was still running at ply t."""
    B = per_ply_keys[0].shape[0]
    seen = [set() for _ in range(B)]
    previous = [set() for _ in range(B)]
    totals = dict(evaluations=0, within_search=0, previous_search=0, whole_game=0)
    for keys, live in zip(per_ply_keys, alive):
        for b in np.flatnonzero(live):
            this = set()
            for k in keys[b][keys[b] != 0].tolist():
                totals["evaluations"] += 1
                totals["within_search"] += k in this
                totals["previous_search"] += k in previous[b] or k in this
                totals["whole_game"] += k in seen[b] or k in this
                this.add(k)
            previous[b] = this
            seen[b] |= this
    return totals


def seconds_per_search(run, variables, states, key, repeats: int) -> float:
    jax.block_until_ready(run(variables, states, key))  # compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(run(variables, states, key))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="configs/chess_cpu.yaml", help="self-play preset (its search)")
    ap.add_argument("--set", nargs="*", default=[], help="dotted overrides of the preset")
    ap.add_argument("--network", default="untrained", help="untrained | a network directory")
    ap.add_argument("--games", type=int, default=16)
    ap.add_argument("--plies", type=int, default=120)
    ap.add_argument("--repeats", type=int, default=5, help="timed searches per network (median)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    cfg = load(SelfPlayConfig, args.config, args.set)
    game = games.make(cfg.game)
    evaluate, variables = networks.make_evaluate(cfg.network, game, args.network, cfg.seed)
    run = search.make_search(game, evaluate, cfg.search, return_tree=True)
    step = jax.jit(game.step)
    key = jax.random.PRNGKey(args.seed)
    states = jax.jit(game.init)(jax.random.split(key, args.games))
    per_ply, alive = [], []
    for _ in range(args.plies):
        live = ~np.asarray(game.terminal(states))
        if not live.any():
            break
        key, sub = jax.random.split(key)
        out, tree = run(variables, states, sub)
        per_ply.append(node_keys(game, tree))
        alive.append(live)
        states = step(states, jnp.where(jnp.asarray(live), out.action, 0))
    totals = count_hits(per_ply, alive)
    n = max(totals["evaluations"], 1)
    rates = {k: round(totals[k] / n, 4) for k in ("within_search", "previous_search", "whole_game")}

    free = lambda v, o: (jnp.zeros((o.shape[0], game.num_actions)), jnp.zeros((o.shape[0],)))
    timed = lambda ev: search.make_search(game, ev, cfg.search)
    real_s = seconds_per_search(timed(evaluate), variables, states, key, args.repeats)
    free_s = seconds_per_search(timed(free), variables, states, key, args.repeats)
    share = max(0.0, 1.0 - free_s / real_s)
    result = {
        "config": args.config, "overrides": args.set, "network": args.network,
        "games": args.games, "plies": len(per_ply), "simulations": cfg.search.num_simulations,
        "policy": cfg.search.policy, "evaluations": totals["evaluations"], "hit_rates": rates,
        "search_seconds": round(real_s, 4), "free_network_search_seconds": round(free_s, 4),
        "network_share": round(share, 3),
        "speedup_bound": round(1.0 / (1.0 - rates["whole_game"] * share), 3),
        "load_average": round(os.getloadavg()[0], 2),
        "network_config": dataclasses.asdict(cfg.network)[cfg.network.family],
    }
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
