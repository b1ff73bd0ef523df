"""Rule movers and arena agents on the probe set (arena/batched/probe.py): what its figures mean in chess, as JSON.

    .venv/bin/python bench/probe_rules.py                 # the 500 positions
    .venv/bin/python bench/probe_rules.py --limit 100
    .venv/bin/python bench/probe_rules.py --agent "av:net=runs/distill/av/student" --agent "stockfish:skill=0,depth=1"

A network's agreement with Stockfish's best move reads against movers whose knowledge is known:
  random     a uniform legal move (exact, the probe's own figure)
  captures   the capture of the most valuable piece by the least valuable attacker, else a random move
  material   two plies of material (1/3/3/5/9): the move whose worst reply leaves the most material,
             a mate first; ties broken at random
So "above a random mover by 5 points" asks less of a network than taking what hangs. `--agent SPEC`
(arena's agent specs, repeatable) puts any player on the same scale: a searchless student beside the
network it learnt from, an engine level. Each position is played from its game's moves (an agent sees
the history, as in a game). One JSON object: each mover's agreement and regret with 95% intervals, the
seconds and the load average.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Callable

import chess
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from games.material import PIECE_VALUES as PIECE  # noqa: E402  by piece type: python-chess's and pgx's codes agree

MATE = 1000
Mover = Callable[[chess.Board, random.Random], chess.Move]


def _pick(scores: dict[chess.Move, float], rng: random.Random) -> chess.Move:
    top = max(scores.values())
    return rng.choice(sorted((m for m, s in scores.items() if s == top), key=chess.Move.uci))


def captures(board: chess.Board, rng: random.Random) -> chess.Move:
    """The most valuable victim, then the least valuable attacker (en passant takes a pawn); else random."""
    caps = [m for m in board.legal_moves if board.is_capture(m)]
    if not caps:
        return rng.choice(sorted(board.legal_moves, key=chess.Move.uci))
    def score(m: chess.Move) -> float:
        victim = board.piece_at(m.to_square)
        return (PIECE[victim.piece_type] if victim else 1) - 0.1 * PIECE[board.piece_type_at(m.from_square)]
    return _pick({m: score(m) for m in caps}, rng)


def _material(board: chess.Board, side: chess.Color) -> int:
    return sum(PIECE[p.piece_type] * (1 if p.color == side else -1) for p in board.piece_map().values())


def material(board: chess.Board, rng: random.Random) -> chess.Move:
    """Two plies of material minimax for the side to move: mate scores first, stalemate 0."""
    side, scores = board.turn, {}
    for move in board.legal_moves:
        board.push(move)
        if board.is_checkmate():
            scores[move] = MATE
        elif not any(board.legal_moves):
            scores[move] = 0
        else:
            worst = MATE
            for reply in board.legal_moves:
                board.push(reply)
                worst = min(worst, -MATE if board.is_checkmate() else _material(board, side))
                board.pop()
            scores[move] = worst
        board.pop()
    return _pick(scores, rng)


MOVERS: dict[str, Mover] = {"captures": captures, "material": material}


def rule_actions(probe, mover: Mover, seed: int = 0) -> np.ndarray:
    """The mover's move in each probe position, as the probe's pgx action ids [N]."""
    rng = random.Random(seed)
    return np.array([probe.actions[i, p.moves.index(mover(p.board(), rng).uci())]
                     for i, p in enumerate(probe.positions)], np.int32)


def agent_mover(agent) -> Mover:
    """An arena agent as a mover, reset before each position."""
    def move(board: chess.Board, rng: random.Random) -> chess.Move:
        agent.reset()
        return agent.select(board)[0]
    return move


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="the first N probe positions")
    parser.add_argument("--seed", type=int, default=0, help="the random tie breaks'")
    parser.add_argument("--agent", action="append", default=[], help="an arena agent spec (repeatable)")
    args = parser.parse_args(argv)
    from arena import make_agent
    from arena import probe as probe_lib
    try:
        agents = {spec: make_agent(spec) for spec in args.agent}
    except (OSError, ValueError) as e:  # a bad spec, a missing network or engine
        raise SystemExit(f"probe_rules.py: {e}") from None
    start = time.perf_counter()
    probe = probe_lib.ProbeSet.load(limit=args.limit)
    movers = {"random": dataclasses.asdict(probe.random_score())}
    try:
        for name, mover in {**MOVERS, **{spec: agent_mover(a) for spec, a in agents.items()}}.items():
            score = probe.score(rule_actions(probe, mover, args.seed))
            movers[name] = dataclasses.asdict(score)
            print(f"{name}: {100 * score.agreement:.1f}% agree, regret {score.regret:.1f}", file=sys.stderr, flush=True)
    finally:
        for agent in agents.values():
            agent.close()
    print(json.dumps({"bench": "probe_rules", "positions": len(probe), "movers": movers,
                      "seconds": time.perf_counter() - start, "load_average": os.getloadavg()[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
