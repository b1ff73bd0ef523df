"""Engine scores -> win probability, as in Ruoss et al. 2024 (Lichess' centipawn -> win% curve).

    win% = 50% * 2 / (1 + exp(-0.00368208 * cp))        mates: 100% (we mate) / 0% (we are mated)

Win probabilities here are fractions in [0, 1] from the point of view of the side the score is for.
"""
from __future__ import annotations

import math

import chess.engine

CP_SCALE = 0.00368208  # Lichess' logistic slope per centipawn


def cp_to_win_prob(cp: float) -> float:
    """Centipawns (side's own view) -> win probability in [0, 1]; 0 cp -> 0.5."""
    x = -CP_SCALE * float(cp)
    if x > 700:  # exp overflow guard: hugely negative cp is a certain loss
        return 0.0
    return 1.0 / (1.0 + math.exp(x))


def score_to_win_prob(score: chess.engine.Score) -> float:
    """A python-chess `Score` (already from the side's point of view) -> win probability.

    Mate(+n) -> 1.0, Mate(-n) and Mate(0) (already mated) -> 0.0, Cp(c) -> the logistic curve.
    """
    if score.is_mate():
        mate = score.mate()
        return 1.0 if mate is not None and mate > 0 else 0.0
    return cp_to_win_prob(score.score())
