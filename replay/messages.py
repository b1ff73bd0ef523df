"""What the replay buffer hands to other rooms: the training batch and the replay statistics.

    batch = buffer.sample(256, seed=7)   # TrainingBatch: a NamedTuple, so a JAX pytree
    stats = buffer.stats()               # ReplayStats: totals, window, outcome split, resignations

selfplay/messages.py re-exports both beside the run's own messages.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

# How a game ended, as TrainingBatch.ending indexes it: won by the rules (checkmate, or the game's own
# win), a resignation, the ply cap (a draw), drawn by the rules (stalemate, repetition, 50 moves, ...),
# scored by material after `actors.adjudicate_plies` (won or drawn)
ENDINGS = ("won_by_rules", "resigned", "capped", "drawn_by_rules", "adjudicated")


class TrainingBatch(NamedTuple):
    """Uniform positions of the replay window, padded to W = max_legal_actions moves (learner/train.py)."""

    # [B, *obs_shape] network input, or its games.packing.PackedObservation (bits [B, nbytes] uint8,
    # values [B, P] float32) that the learner unpacks on its device
    observation: np.ndarray
    legal_actions: np.ndarray  # [B, W] int32 pgx ids of the legal moves, -1 pads
    policy: np.ndarray  # [B, W] float32 search policy target pi over those moves (0 at pads)
    z: np.ndarray  # [B] float32 game outcome for the side to move, in {-1, 0, 1}
    q: np.ndarray | None = None  # [B] float32 the search's root value for the side to move (None: not sampled)
    ending: np.ndarray | None = None  # [B] int8 how the position's game ended: an index into ENDINGS
    # [B] int32 parameter version (learner step) of the network that played the position, interpolated
    # over the game's plies between the first and last versions that played it (replay/record.py)
    version: np.ndarray | None = None


@dataclasses.dataclass(frozen=True)
class ReplayStats:
    """Totals of the run's replay directory (pruned chunk files included) and the current window."""

    games_total: int  # games ever written to this run's replay directory
    positions_total: int  # positions of those games
    window_games: int  # games in the in-memory window
    window_positions: int  # positions in the window
    mean_game_length: float  # mean plies of the most recent (up to 200) games
    window_bytes: int = 0  # host memory of the window's arrays (replay/window.py)
    games_quarantined: int = 0  # damaged games set aside at this start (their chunk files: replay/quarantine/)
    # Counters summed over the games (replay/buffer.py `outcome_counters`):
    first_player_wins: int = 0  # games won by the player who moved first
    draws: int = 0  # drawn games (the ply cap included)
    first_player_losses: int = 0  # games lost by the player who moved first
    resigned: int = 0  # games ended by resignation
    capped: int = 0  # games ended at the game's ply cap (a draw)
    adjudicated: int = 0  # games scored by material (actors.adjudicate_plies)
    no_resign_games: int = 0  # games of the never-resign fraction
    resign_would_have: int = 0  # never-resign games where a player would have resigned
    resign_false_positives: int = 0  # ... and that player did not lose

    def fraction(self, count: int) -> float:
        """`count` (one of the counters above) as a fraction of games_total (0 with no games)."""
        return count / max(1, self.games_total)

    @property
    def resign_false_positive_rate(self) -> float:
        """False positives among the never-resign games where someone would have resigned."""
        return self.resign_false_positives / max(1, self.resign_would_have)
