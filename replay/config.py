"""Replay buffer settings."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """How many positions the buffer keeps in memory and how it writes them to disk."""

    window_positions: int = 100_000  # sample from the most recent positions only (whole games; AlphaZero: 1M games)
    min_positions: int = 2_000  # the learner waits until the window holds this many positions
    games_per_chunk: int = 256  # games per chunk file on disk (runs/<name>/replay/chunk-*.msgpack)
    disk_positions: int = 0  # delete the oldest chunk files once newer ones hold this many positions (and the window); 0: keep every game
    strict: bool = False  # a damaged chunk file on reload stops the run (exit 2); false: it moves to replay/quarantine/, its intact games are kept

    def __post_init__(self):
        if self.window_positions < 1 or self.min_positions < 0 or self.games_per_chunk < 1 or self.disk_positions < 0:
            raise ValueError("window_positions and games_per_chunk must be >= 1, min_positions and disk_positions >= 0")
