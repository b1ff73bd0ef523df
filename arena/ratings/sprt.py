"""Sequential probability ratio test: stop a match once "elo >= elo1" or "elo <= elo0" is decided.

The generalized SPRT (as fishtest, logistic Elo): the outcomes of a unit (a game: 0, 1/2, 1; or
a game pair: 0, 1/4, ..., 1 per game) follow an unknown distribution p. Under H0 (H1) its mean
score is s0 = score(elo0) (s1); each hypothesis takes the maximum-likelihood p with that mean,
and LLR = sum_i n_i log(p1_i / p0_i). Counts get 1e-3 added so one-sided starts stay finite.
H1 is accepted when LLR >= log((1 - beta) / alpha), H0 when LLR <= log(beta / (1 - alpha)).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

from arena.ratings.elo import score_from_elo


@dataclasses.dataclass(frozen=True)
class SprtConfig:
    """Hypotheses and error rates of one test."""

    elo0: float = 0.0  # H0: the first player is at most this much stronger
    elo1: float = 5.0  # H1: at least this much stronger
    alpha: float = 0.05  # false-positive rate (accepting H1 when H0 holds)
    beta: float = 0.05  # false-negative rate

    def __post_init__(self):
        if not self.elo1 > self.elo0:
            raise ValueError(f"SPRT needs elo1 > elo0, got elo0={self.elo0} elo1={self.elo1}")
        for name in ("alpha", "beta"):
            if not 0 < getattr(self, name) < 0.5:
                raise ValueError(f"SPRT {name} must be in (0, 0.5), got {getattr(self, name)}")

    @property
    def bounds(self) -> tuple[float, float]:
        """(lower, upper) log-likelihood-ratio bounds."""
        return (math.log(self.beta / (1 - self.alpha)), math.log((1 - self.beta) / self.alpha))


@dataclasses.dataclass(frozen=True)
class SprtResult:
    llr: float
    lower: float
    upper: float
    decision: str  # "H1" (elo >= elo1), "H0" (elo <= elo0) or "continue"


_PSEUDO_COUNT = 1e-3  # per outcome, so a distribution with one observed outcome has a finite LLR


def _max_likelihood(values: Sequence[float], counts: Sequence[float], mean: float) -> list[float]:
    """The distribution p over `values` maximizing sum c_i log p_i with sum p_i v_i = mean.

    Lagrange: p_i = c_i / (N (1 + lam (v_i - mean))), lam the root of the decreasing
    f(lam) = sum c_i (v_i - mean) / (1 + lam (v_i - mean)) on the interval keeping all p_i > 0.
    """
    total = sum(counts)
    dev = [v - mean for v in values]
    lo = -1 / max(dev) + 1e-12 if max(dev) > 0 else -1e9
    hi = -1 / min(dev) - 1e-12 if min(dev) < 0 else 1e9
    for _ in range(200):
        lam = (lo + hi) / 2
        f = sum(c * d / (1 + lam * d) for c, d in zip(counts, dev))
        lo, hi = (lam, hi) if f > 0 else (lo, lam)
    lam = (lo + hi) / 2
    return [c / (total * (1 + lam * d)) for c, d in zip(counts, dev)]


def _llr(values: Sequence[float], counts: Sequence[int], cfg: SprtConfig) -> float:
    if sum(counts) == 0:
        return 0.0
    counts = [c + _PSEUDO_COUNT for c in counts]
    p0 = _max_likelihood(values, counts, score_from_elo(cfg.elo0))
    p1 = _max_likelihood(values, counts, score_from_elo(cfg.elo1))
    return sum(c * math.log(a / b) for c, a, b in zip(counts, p1, p0))


def _decide(llr: float, cfg: SprtConfig) -> SprtResult:
    lower, upper = cfg.bounds
    decision = "H1" if llr >= upper else "H0" if llr <= lower else "continue"
    return SprtResult(llr, lower, upper, decision)


def sprt_wdl(wins: int, draws: int, losses: int, cfg: SprtConfig) -> SprtResult:
    """SPRT from game counts of the first player."""
    return _decide(_llr((1.0, 0.5, 0.0), (wins, draws, losses), cfg), cfg)


def sprt_pentanomial(counts: Sequence[int], cfg: SprtConfig) -> SprtResult:
    """SPRT from pentanomial pair counts [0, .5, 1, 1.5, 2 points]."""
    return _decide(_llr((0.0, 0.25, 0.5, 0.75, 1.0), counts, cfg), cfg)
