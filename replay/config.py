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
    # Anchor boards (replay/anchor.py): oracle-annotated boards mixed into every training batch, so a run
    # from a warm start keeps what distillation taught it. anchor_records: a `distill.py annotate`
    # directory (its train split is read; "" none); anchor_fraction: the share of each batch they make;
    # anchor_boards: how many are read (about 1.4 KB each in memory for chess); anchor_temperature: their
    # policy target, 0 one-hot on the oracle's best move, > 0 softmax(move win probabilities / T) (the
    # target a network warm-started with warm_start.policy_temperature T learnt, so anchors keep its prior as distilled)
    anchor_records: str = ""
    anchor_fraction: float = 0.0
    anchor_boards: int = 50_000
    anchor_temperature: float = 0.0

    def __post_init__(self):
        if self.window_positions < 1 or self.min_positions < 0 or self.games_per_chunk < 1 or self.disk_positions < 0:
            raise ValueError("window_positions and games_per_chunk must be >= 1, min_positions and disk_positions >= 0")
        if not 0.0 <= self.anchor_fraction < 1.0:
            raise ValueError(f"replay.anchor_fraction must be in [0, 1) (0: no anchor boards), got {self.anchor_fraction:g}")
        if (self.anchor_fraction > 0) != bool(self.anchor_records):
            raise ValueError("replay.anchor_fraction > 0 and replay.anchor_records (a distill.py annotate directory) "
                             "go together: set both, or neither")
        if self.anchor_boards < 1:
            raise ValueError(f"replay.anchor_boards must be >= 1, got {self.anchor_boards}")
        if self.anchor_temperature < 0:
            raise ValueError(f"replay.anchor_temperature must be >= 0 (0: one-hot on the best move), got {self.anchor_temperature:g}")
