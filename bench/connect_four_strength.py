"""Strength of a connect-four self-play run: win rate against a random player and a depth-limited
alpha-beta player (arena/batched/board_players.py), as either colour. Prints ONE JSON object.

    .venv/bin/python selfplay.py --config configs/connect_four.yaml --set max_minutes=20
    .venv/bin/python bench/connect_four_strength.py --run runs/connect_four --depth 4

The agent is the run's latest network (runs/<name>/network) with the run's search, played
deterministically (no Gumbel noise, no temperature); `--simulations N` searches N simulations a move
instead (test-time search: the same network, more thinking). Alpha-beta: negamax to `depth` plies with a
window-count heuristic, random among equally good moves. The first `--random-plies` plies of every
game (2, as the in-run evaluator's openings) are uniform random for both sides: a deterministic agent
from the empty board would otherwise replay one game against each tie-break of alpha-beta.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import games  # noqa: E402
import models  # noqa: E402
from arena import alphabeta_move  # noqa: E402
from configs import load  # noqa: E402
from search import make_search  # noqa: E402
from selfplay import SelfPlayConfig  # noqa: E402


@dataclasses.dataclass(frozen=True)
class GameTrace:
    """One bench game: every column played, and the agent's root value and certainty at each of its
    searched moves (a value that stays confident until a sudden proven loss marks a misjudged position)."""

    agent_first: bool
    game: int
    result: int  # +1 / 0 / -1 for the agent
    moves: list[int]  # columns 0-6 of both sides, in order
    agent_moves: list[tuple[int, float, bool]]  # (ply, root value for the agent, root proven)


def score_stderr(traces: list[GameTrace]) -> tuple[int, float]:
    """(distinct games, standard error of the mean score) over `traces`. After the random opening both
    players are deterministic but for alpha-beta's tie-breaks, so some games repeat move for move; a
    repeat is not an independent trial. Identical games (same colour, same moves) form one cluster and
    the error is the cluster-robust one, sqrt(sum_c (sum_{i in c} (x_i - p))^2) / N, which equals the
    plain sqrt(p (1 - p) / N) when no game repeats."""
    scores = np.array([(t.result + 1) / 2 for t in traces])
    if len(scores) == 0:
        return 0, 0.0
    mean = scores.mean()
    clusters: dict[tuple, float] = {}
    for t, x in zip(traces, scores):
        key = (t.agent_first, tuple(t.moves))
        clusters[key] = clusters.get(key, 0.0) + (x - mean)
    return len(clusters), float(np.sqrt(sum(d * d for d in clusters.values())) / len(scores))


def play(agent_search, variables, game, opponent, num_games: int, agent_first: bool, seed: int,
         random_plies: int = 0, traces: list | None = None) -> dict:
    """W/D/L of the agent over `num_games` batched games; appends one GameTrace per game to `traces`."""
    rng = np.random.default_rng(seed)
    states = game.init(jax.random.split(jax.random.PRNGKey(seed), num_games))
    agent = np.asarray(states.current_player) if agent_first else 1 - np.asarray(states.current_player)
    step = jax.jit(game.step)
    rewards = np.zeros((num_games, 2))  # pgx rewards are non-zero only on the step that ends a game
    moves = [[] for _ in range(num_games)]
    agent_moves = [[] for _ in range(num_games)]
    for ply in range(game.spec.max_plies):
        done = np.asarray(game.terminal(states))
        if done.all():
            break
        random_ply = ply < random_plies  # both sides random: no search needed
        to_move = np.asarray(states.current_player)
        agent_to_move = np.any(~done & (to_move == agent))  # all games share a ply: often none is
        actions = np.zeros(num_games, np.int32)
        if agent_to_move and not random_ply:
            out = agent_search(variables, states, jax.random.PRNGKey(ply))
            actions = np.asarray(out.action).copy()
            value, proven = np.asarray(out.root_value), np.asarray(out.root_certain)
            for b in np.flatnonzero(~done & (to_move == agent)):
                agent_moves[b].append((ply, round(float(value[b]), 3), bool(proven[b])))
        obs = np.asarray(game.observe(states))
        legal = np.asarray(game.legal_mask(states))
        for b in np.flatnonzero(~done & ((to_move != agent) | random_ply)):
            board = obs[b, ..., 0] * 1 + obs[b, ..., 1] * 2
            random_move = opponent is None or random_ply
            actions[b] = rng.choice(np.flatnonzero(legal[b])) if random_move else opponent(board, rng)
        for b in np.flatnonzero(~done):
            moves[b].append(int(actions[b]))
        states = step(states, jnp.asarray(np.maximum(actions, 0)))
        rewards += np.asarray(states.rewards)
    reward = rewards[np.arange(num_games), agent]
    if traces is not None:
        traces.extend(GameTrace(agent_first, b, int(np.sign(reward[b])), moves[b], agent_moves[b])
                      for b in range(num_games))
    return {"wins": int((reward > 0).sum()), "draws": int((reward == 0).sum()), "losses": int((reward < 0).sum())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", default="runs/connect_four", help="run directory of a connect_four self-play run")
    p.add_argument("--network", default="", help="network directory to play (default: the run's latest, "
                   "<run>/network); e.g. <run>/eval/networks/step-1000 for an earlier one")
    p.add_argument("--depth", type=int, default=4, help="alpha-beta search depth (plies)")
    p.add_argument("--random-games", type=int, default=100, help="games per colour against random")
    p.add_argument("--alphabeta-games", type=int, default=20, help="games per colour against alpha-beta")
    p.add_argument("--random-plies", type=int, default=2, help="uniform random opening plies of every game")
    p.add_argument("--simulations", type=int, default=0, help="simulations per move (default: the run's)")
    p.add_argument("--set", dest="overrides", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="override a value of the run's config (dotted key), e.g. search.win_check_max_replies=7")
    p.add_argument("--trace", default="", metavar="FILE", help="write every game against alpha-beta as a JSON "
                   "line: its columns, result, and the agent's root value and proof at each of its moves")
    args = p.parse_args()
    try:
        cfg = load(SelfPlayConfig, os.path.join(args.run, "config.yaml"), args.overrides)
    except (ValueError, OSError) as e:  # ConfigError is one: a bad key or value, a missing run
        p.error(str(e))
    network_dir = args.network or os.path.join(args.run, "network")
    try:
        network = models.load_evaluation(network_dir)
    except (ValueError, OSError) as e:  # a missing or damaged network directory
        p.error(str(e))
    try:  # opened now: a bad path fails before the games, not after
        trace_file = open(args.trace, "w") if args.trace else None
    except OSError as e:
        p.error(f"--trace {args.trace}: {e.strerror}; name a file in a writable directory")
    game = games.make("connect_four")
    search_cfg = dataclasses.replace(cfg.search.for_play(), num_simulations=args.simulations or cfg.search.num_simulations)
    search = make_search(game, network.evaluate, search_cfg)
    result = {"run": args.run, "network": network_dir, "step": network.metadata.get("step"),
              "simulations": search_cfg.num_simulations, "alphabeta_depth": args.depth,
              "random_plies": args.random_plies, "overrides": args.overrides}
    ab = lambda board, rng: alphabeta_move(board, args.depth, rng)
    traces: list[GameTrace] = []
    for name, opponent, n in (("random", None, args.random_games), ("alphabeta", ab, args.alphabeta_games)):
        for first in (True, False):
            r = play(search, network.variables, game, opponent, n, first, seed=int(first),
                     random_plies=args.random_plies, traces=traces if name == "alphabeta" else None)
            result[f"vs_{name}_{'first' if first else 'second'}"] = r
        total = [result[f"vs_{name}_first"], result[f"vs_{name}_second"]]
        result[f"win_rate_vs_{name}"] = sum(t["wins"] for t in total) / (2 * n)
        result[f"score_vs_{name}"] = sum(t["wins"] + 0.5 * t["draws"] for t in total) / (2 * n)
    distinct, stderr = score_stderr(traces)
    result["distinct_games_vs_alphabeta"] = distinct
    result["score_stderr_vs_alphabeta"] = round(stderr, 4)  # repeated games counted once (score_stderr)
    if trace_file is not None:
        with trace_file:
            for t in traces:
                trace_file.write(json.dumps(dataclasses.asdict(t)) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
