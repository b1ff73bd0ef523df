"""What each game's strength is measured against during a run (selfplay/evaluator.py), per game:
the fixed ladder of opponents besides random and the run's earlier networks, and whether the game's
positions and moves have chess's notations (FEN, UCI: games/chess_bridge.py), which decide the kind
of opponent specs, the start positions, the games' PGN and the mate puzzles.

    defaults("connect_four").ladder       # ("alphabeta:depth=2", "alphabeta:depth=4")
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class EvaluationDefaults:
    """One game's evaluation defaults (`evaluation.engines` overrides the ladder)."""

    # the fixed opponents: arena agent specs (arena/spec.py) where `fen_uci`, else arena/board_players.py
    # specs; () plays random and the earlier networks only
    ladder: tuple[str, ...] = ()
    # positions in FEN, moves in UCI: the ladder's engines play from an opening book's positions
    # (`evaluation.book`), the games are written as PGN, and mate puzzles are solved; otherwise the starts
    # are `evaluation.random_plies` random plies from the initial position
    fen_uci: bool = False


EVALUATION = {
    "chess": EvaluationDefaults(("stockfish:skill=0,depth=1",), fen_uci=True),
    "tic_tac_toe": EvaluationDefaults(("minimax",)),
    "connect_four": EvaluationDefaults(("alphabeta:depth=2", "alphabeta:depth=4")),
}


def defaults(game: str) -> EvaluationDefaults:
    """`game`'s evaluation defaults (a game without an entry: no ladder, random starts)."""
    return EVALUATION.get(game, EvaluationDefaults())
