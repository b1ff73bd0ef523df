"""Replay buffer settings."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """How many positions the buffer keeps in memory and how it writes them to disk."""

    window_positions: int = 100_000  # sample from the most recent positions only (whole games; AlphaZero: 1M games)
    min_positions: int = 2_000  # the learner waits until the window holds this many positions
    games_per_chunk: int = 256  # games per chunk file on disk (runs/<name>/replay/chunk-*.msgpack)

    def __post_init__(self):
        if self.window_positions < 1 or self.min_positions < 0 or self.games_per_chunk < 1:
            raise ValueError("window_positions and games_per_chunk must be >= 1, min_positions >= 0")
