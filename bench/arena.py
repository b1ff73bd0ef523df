"""Arena speed: MCTS agent moves per second (simulations/s), UCI round trips, game throughput.

    .venv/bin/python bench/arena.py                  # ResNet 2x32 (untrained), 32 simulations
    .venv/bin/python bench/arena.py --sims 128 --moves 20 --net runs/cpu60/network

Measures, after compilation: the MCTS agent's seconds per move from the initial position onwards
(one position at a time, as match.py and uci.py play), the policy agent's seconds per move, and
random-vs-random / Stockfish-skill-0-vs-random games per second through arena.play.game (python-chess
rules and PGN, no network). Prints ONE JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _tiny_checkpoint(directory: str) -> str:
    import jax
    import jax.numpy as jnp

    import games
    from models import make_network, network_dir, presets
    cfg = presets.get("resnet_2x32")
    net = make_network(cfg, games.make("chess").spec)
    variables = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 8, 8, 119)), train=False)
    return str(network_dir.save(os.path.join(directory, "net"), cfg, variables, game="chess"))


def _seconds_per_move(agent, moves: int) -> tuple[float, float]:
    """(first call incl. compile, mean of the following `moves` calls) in seconds."""
    import chess
    board = chess.Board()
    t0 = time.perf_counter()
    move, _ = agent.select(board)
    first = time.perf_counter() - t0
    board.push(move)
    t0 = time.perf_counter()
    for _ in range(moves):
        if board.is_game_over():
            break
        move, _ = agent.select(board)
        board.push(move)
    return first, (time.perf_counter() - t0) / moves


def _games_per_second(white_spec: str, black_spec: str, games: int) -> float:
    from arena import START, make_agent, play_game
    with make_agent(white_spec) as white, make_agent(black_spec) as black:
        t0 = time.perf_counter()
        for _ in range(games):
            play_game(white, black, START)
        return games / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--net", help="chess network directory (default: an untrained ResNet 2x32)")
    parser.add_argument("--sims", type=int, default=32)
    parser.add_argument("--moves", type=int, default=10, help="timed moves per agent")
    parser.add_argument("--games", type=int, default=4, help="timed games per pairing")
    args = parser.parse_args()
    from runtime import enable_compilation_cache
    enable_compilation_cache()
    from arena import make_agent
    with tempfile.TemporaryDirectory() as tmp:
        net = args.net or _tiny_checkpoint(tmp)
        mcts = make_agent(f"mcts:net={net},sims={args.sims}")
        mcts_first, mcts_move = _seconds_per_move(mcts, args.moves)
        policy_first, policy_move = _seconds_per_move(make_agent(f"policy:net={net}"), args.moves)
    result = {
        "bench": "arena", "network": args.net or "untrained resnet_2x32",
        "simulations": args.sims,
        "mcts_seconds_per_move": round(mcts_move, 4),
        "mcts_simulations_per_second": round(args.sims / mcts_move, 1),
        "mcts_first_move_seconds_incl_compile": round(mcts_first, 2),
        "policy_seconds_per_move": round(policy_move, 4),
        "policy_first_move_seconds_incl_compile": round(policy_first, 2),
        "random_vs_random_games_per_second": round(_games_per_second("random:seed=1", "random:seed=2", args.games), 3),
        "stockfish_skill0_vs_random_games_per_second": round(
            _games_per_second("stockfish:skill=0,nodes=1000", "random", args.games), 3),
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
