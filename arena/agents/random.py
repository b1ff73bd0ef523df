"""The weakest baseline: a uniformly random legal move."""
from __future__ import annotations

import random

import chess

from arena.agents.agent import Agent, Limit


class RandomAgent(Agent):
    """Uniform over legal moves; `seed` makes a game reproducible."""

    def __init__(self, seed: int | None = None, name: str = "random"):
        self.name = name
        self.seed = seed
        self._rng = random.Random(seed)

    def reset(self, game: int | None = None) -> None:
        if game is not None and self.seed is not None:
            self._rng = random.Random(f"{self.seed}/{game}")

    def select(self, board: chess.Board, limit: Limit | None = None, stop=None):
        moves = list(board.legal_moves)
        if not moves:
            raise ValueError(f"no legal move in {board.fen()}")
        move = self._rng.choice(moves)
        return move, {"nodes": 1, "pv": [move]}
