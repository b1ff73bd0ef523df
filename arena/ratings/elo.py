"""Elo difference with a 95% interval, from W/D/L counts or from pentanomial game pairs.

The logistic model: expected score s = 1 / (1 + 10^(-elo/400)), so elo = -400 log10(1/s - 1);
a 75% score is +190.8. The interval maps s +- 1.96 standard errors of the mean score through
that curve. With openings played with both colours, the pair scores (0, .5, 1, 1.5, 2 points per
pair: the pentanomial) have smaller variance than single games, so their interval is tighter and
honest about the correlation within a pair.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

Z95 = 1.959963984540054  # two-sided 95% normal quantile


def elo_from_score(score: float) -> float:
    """Mean score in [0, 1] -> Elo difference (+-inf at 1 and 0)."""
    if score >= 1.0:
        return math.inf
    if score <= 0.0:
        return -math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def score_from_elo(elo: float) -> float:
    """Elo difference -> expected score."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


@dataclasses.dataclass(frozen=True)
class EloEstimate:
    """An Elo difference with its 95% interval (lower, upper) and the score it came from."""

    elo: float
    lower: float
    upper: float
    score: float  # mean score per game
    games: int

    @property
    def error(self) -> float:
        """Half-width of the interval (the "+-" people quote)."""
        return (self.upper - self.lower) / 2

    def __str__(self) -> str:
        if math.isfinite(self.error):
            return f"{self.elo:+.1f} +- {self.error:.1f} (95%, {self.games} games)"
        return f"{self.elo:+.1f} [{self.lower:+.1f}, {self.upper:+.1f}] (95%, {self.games} games)"


def _estimate(values: Sequence[float], probs: Sequence[float], n: int, games: int) -> EloEstimate:
    """values: per-unit scores (in [0, 1]); probs: their frequencies; n: number of units."""
    mean = sum(v * p for v, p in zip(values, probs))
    var = sum(p * (v - mean) ** 2 for v, p in zip(values, probs))
    if var > 1e-12:
        stderr = math.sqrt(var / n)
        lo, hi = mean - Z95 * stderr, mean + Z95 * stderr
    else:  # every unit scored the same (e.g. 100%): the normal interval collapses; use Wilson's
        z2n = Z95 * Z95 / n
        centre = (mean + z2n / 2) / (1 + z2n)
        half = Z95 / (1 + z2n) * math.sqrt(mean * (1 - mean) / n + z2n / (4 * n))
        lo, hi = (0.0 if mean <= 0 else centre - half), (1.0 if mean >= 1 else centre + half)
    return EloEstimate(elo_from_score(mean), elo_from_score(lo), elo_from_score(hi), mean, games)


def elo_wdl(wins: int, draws: int, losses: int) -> EloEstimate:
    """Elo of the first player from its W/D/L (trinomial model)."""
    n = wins + draws + losses
    if n == 0:
        return EloEstimate(0.0, -math.inf, math.inf, 0.5, 0)
    return _estimate((1.0, 0.5, 0.0), (wins / n, draws / n, losses / n), n, n)


def pentanomial(pair_points: Sequence[float]) -> list[int]:
    """Pair points (0, 0.5, ..., 2: the first player's total over a game pair) -> counts [5]."""
    counts = [0] * 5
    for points in pair_points:
        index = round(points * 2)
        if not 0 <= index <= 4 or abs(points * 2 - index) > 1e-9:
            raise ValueError(f"pair points {points} not in 0, 0.5, ..., 2")
        counts[index] += 1
    return counts


def elo_pentanomial(counts: Sequence[int]) -> EloEstimate:
    """Elo of the first player from pentanomial counts [LL, LD, DD or WL, WD, WW] of pairs."""
    if len(counts) != 5:
        raise ValueError(f"pentanomial needs 5 counts, got {len(counts)}")
    n = sum(counts)
    if n == 0:
        return EloEstimate(0.0, -math.inf, math.inf, 0.5, 0)
    return _estimate((0.0, 0.25, 0.5, 0.75, 1.0), [c / n for c in counts], n, 2 * n)
