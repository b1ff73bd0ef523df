"""Win probability: the one scale engines, networks and students are compared on.

Centipawns <-> win probability through the curve Lichess uses (and Ruoss et al. 2024 annotate with):

    win% = 50% * 2 / (1 + exp(-0.00368208 * cp))          mates: 100% (we mate) / 0% (we are mated)

A network's value v in [-1, 1] is the expected score 2p - 1 with p the win probability, so
cp = ln((1 + v) / (1 - v)) / 0.00368208 = 2 atanh(v) / 0.00368208.

Searchless students predict K uniform value bins of p (Ruoss et al. 2024: K = 128): bin i covers
[i/K, (i+1)/K) (the last bin includes 1.0) and stands for its centre (i + 0.5)/K. The bin functions
take and return JAX arrays (they run inside jitted losses and players); JAX loads on first use.
Win probabilities are fractions in [0, 1] from the point of view of the side the score is for.
"""
from __future__ import annotations

import math

import chess.engine

WIN_PROB_SLOPE = 0.00368208  # Lichess' logistic slope per centipawn
MAX_CP = 20000  # |v| -> 1 maps to +-inf; cap it below mate scores


def cp_to_win_prob(cp: float) -> float:
    """Centipawns (side's own view) -> win probability in [0, 1]; 0 cp -> 0.5."""
    x = -WIN_PROB_SLOPE * float(cp)
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


def cp_from_value(value: float) -> int:
    """Value for the side to move in [-1, 1] -> centipawns (capped at +-MAX_CP)."""
    value = min(max(float(value), -1.0), 1.0)
    if abs(value) >= 1.0:
        return int(math.copysign(MAX_CP, value))
    cp = 2.0 * math.atanh(value) / WIN_PROB_SLOPE
    return int(round(max(-MAX_CP, min(MAX_CP, cp))))


def value_from_cp(cp: float) -> float:
    """Centipawns -> value in [-1, 1] (the forward formula: 2 cp_to_win_prob(cp) - 1)."""
    return 2.0 / (1.0 + math.exp(-WIN_PROB_SLOPE * cp)) - 1.0


# ---- K value bins ---------------------------------------------------------------------------

def bin_centers(num_bins: int):
    """[K] bin centres (i + 0.5) / K."""
    import jax.numpy as jnp
    return (jnp.arange(num_bins) + 0.5) / num_bins


def value_to_bin(win_prob, num_bins: int):
    """Win probabilities [...] in [0, 1] -> bin indices [...] int32: floor(p * K), 1.0 -> K - 1."""
    import jax.numpy as jnp
    return jnp.minimum((jnp.asarray(win_prob) * num_bins).astype(jnp.int32), num_bins - 1)


def bin_targets(win_prob, num_bins: int, kind: str, sigma_bins: float = 0.75):
    """[B] win probabilities -> [B, K] target distributions: "ce" one-hot on the bin (the paper),
    "hl_gauss" the mass of N(p, (sigma_bins / K)^2) in each bin, renormalised (Imani & White 2018;
    Farebrother et al. 2024)."""
    import jax
    import jax.numpy as jnp
    if kind == "ce":
        return jax.nn.one_hot(value_to_bin(win_prob, num_bins), num_bins)
    if kind != "hl_gauss":
        raise ValueError(f"unknown bin target kind {kind!r} (use ce or hl_gauss)")
    edges = jnp.linspace(0.0, 1.0, num_bins + 1)
    cdf = jax.scipy.special.ndtr((edges[None] - jnp.asarray(win_prob)[:, None]) / (sigma_bins / num_bins))
    mass = cdf[:, 1:] - cdf[:, :-1]
    return mass / mass.sum(-1, keepdims=True)


def expected_bin_value(logprobs):
    """[..., K] log-probabilities over bins -> [...] expected win probability."""
    import jax.numpy as jnp
    return jnp.exp(logprobs) @ bin_centers(logprobs.shape[-1])
