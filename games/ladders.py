"""Each game's ladder: the fixed opponents a run's evaluator (selfplay/evaluation/) plays besides
random and the run's earlier networks, and whether the game's positions and moves have chess's
notations (FEN, UCI: games/chess_bridge.py), which decide the kind of opponent specs, the start
positions, the games' PGN and the mate puzzles.

    ladder("connect_four").opponents       # ("alphabeta:depth=2", "alphabeta:depth=4")
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Ladder:
    """One game's ladder (`evaluation.engines` overrides its opponents)."""

    # the fixed opponents: arena agent specs (arena/agents/spec.py) where `fen_uci`, else arena/batched/board_players.py
    # specs; () plays random and the earlier networks only
    opponents: tuple[str, ...] = ()
    # positions in FEN, moves in UCI: the ladder's engines play from an opening book's positions
    # (`evaluation.book`), the games are written as PGN, and mate puzzles are solved; otherwise the starts
    # are `evaluation.random_plies` random plies from the initial position
    fen_uci: bool = False


LADDERS = {
    "chess": Ladder(("stockfish:skill=0,depth=1",), fen_uci=True),
    "tic_tac_toe": Ladder(("minimax",)),
    "connect_four": Ladder(("alphabeta:depth=2", "alphabeta:depth=4")),
}


def ladder(game: str) -> Ladder:
    """`game`'s ladder (a game without one: no fixed opponents, random starts)."""
    return LADDERS.get(game, Ladder())
