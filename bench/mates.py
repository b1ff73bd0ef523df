"""Does the search see forced mates? Lichess mate puzzles solved by batched MCTS, as JSON.

    .venv/bin/python bench/mates.py                                 # untrained chess_cpu net, 64 sims
    .venv/bin/python bench/mates.py --network runs/cpu60/network --policy gumbel
    .venv/bin/python bench/mates.py --win-check none --no-certainty # plain AlphaZero, for comparison

The solver plays the whole line of `lichess_puzzles_themed.csv` (the opponent's replies are the
puzzle's); at any solver move, a move that mates is accepted even if it is not the puzzle's. One
JSON object: solved / total per theme, with the settings, simulations/s and the load average.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax.numpy as jnp  # noqa: E402

import games  # noqa: E402
import models  # noqa: E402
import search  # noqa: E402
from arena import mate_puzzles  # noqa: E402
from search import SearchConfig  # noqa: E402

CHESS = games.make("chess")


def evaluation(network: str, seed: int):
    """(evaluate, params): 'uniform' (zero logits and value), 'untrained' (chess_cpu's network
    initialised with `seed`), or a network directory."""
    if network == "uniform":
        def evaluate(params, obs):
            return jnp.zeros((obs.shape[0], CHESS.num_actions)), jnp.zeros((obs.shape[0],))
        return evaluate, None
    if network == "untrained":
        from configs import load
        from selfplay import SelfPlayConfig

        preset = load(SelfPlayConfig, str(Path(__file__).resolve().parents[1] / "configs" / "chess_cpu.yaml"))
        ev = models.load_evaluation(preset.network, CHESS.spec, seed)
    else:
        ev = models.load_evaluation(network)
    return ev.evaluate, ev.variables


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--network", default="untrained", help="uniform | untrained | a network directory")
    ap.add_argument("--policy", default="puct", choices=search.config.POLICIES)
    ap.add_argument("--sims", type=int, default=64)
    ap.add_argument("--q-transform", default="parent_and_siblings", choices=search.config.Q_TRANSFORMS)
    ap.add_argument("--fpu-reduction", type=float, default=SearchConfig.fpu_reduction)
    ap.add_argument("--win-check", default="tree", choices=search.config.WIN_CHECKS)
    ap.add_argument("--no-certainty", action="store_true", help="no certainty propagation")
    ap.add_argument("--themes", default="mateIn1,mateIn2,mateIn3")
    ap.add_argument("--count", type=int, default=100, help="puzzles per theme (the file's first)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    config = SearchConfig(policy=args.policy, num_simulations=args.sims, root_noise=False,
                          temperature_plies=0, gumbel_scale=0.0, q_transform=args.q_transform,
                          fpu_reduction=args.fpu_reduction,
                          win_check=args.win_check,
                          certainty_propagation=not args.no_certainty)
    evaluate, params = evaluation(args.network, args.seed)
    run = search.make_search(CHESS, evaluate, config)
    result = {"network": args.network, "search": dataclasses.asdict(config), "themes": {}}
    for theme in args.themes.split(","):
        puzzles = mate_puzzles.load_mate_puzzles(theme, args.count)
        start = time.perf_counter()
        solved, searches = mate_puzzles.solve_mate_puzzles(puzzles, mate_puzzles.search_mover(run, params), args.seed)
        seconds = time.perf_counter() - start
        result["themes"][theme] = {"solved": solved, "total": len(puzzles),
                                   "rate": round(solved / max(len(puzzles), 1), 3),
                                   "searches": searches, "seconds": round(seconds, 1),
                                   "sims_per_s": round(searches * args.sims / seconds, 1)}
    result["load_average"] = os.getloadavg()[0]
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
