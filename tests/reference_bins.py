"""Reference for the tests: win probabilities <-> K uniform value bins in numpy, written
independently of the library's JAX version (games/winprob.py), which the tests compare to it.

Bin i covers [i/K, (i+1)/K) (the last bin includes 1.0); its value is the centre (i + 0.5)/K.
Targets: one-hot on the bin (the paper's main setting) or a Gaussian histogram (HL-Gauss, optional).
"""
from __future__ import annotations

import numpy as np


def bin_edges(num_bins: int) -> np.ndarray:
    """[K+1] uniform edges 0, 1/K, ..., 1."""
    if num_bins < 2:
        raise ValueError(f"num_bins must be >= 2, got {num_bins}")
    return np.linspace(0.0, 1.0, num_bins + 1)


def bin_centers(num_bins: int) -> np.ndarray:
    """[K] bin centres (i + 0.5) / K."""
    edges = bin_edges(num_bins)
    return (edges[:-1] + edges[1:]) / 2


def value_to_bin(win_prob: np.ndarray | float, num_bins: int) -> np.ndarray:
    """Win probabilities [...] in [0, 1] -> bin indices [...] (int32): floor(p * K), 1.0 -> K - 1."""
    p = np.asarray(win_prob, dtype=np.float64)
    if np.any((p < 0) | (p > 1)) or np.any(np.isnan(p)):
        raise ValueError("win probabilities must lie in [0, 1]")
    return np.minimum((p * num_bins).astype(np.int32), num_bins - 1)


def one_hot_targets(win_prob: np.ndarray, num_bins: int) -> np.ndarray:
    """[...] win probabilities -> [..., K] one-hot bin targets (float32)."""
    idx = value_to_bin(win_prob, num_bins)
    return np.eye(num_bins, dtype=np.float32)[idx]


def hl_gauss_targets(win_prob: np.ndarray, num_bins: int, sigma_bins: float = 0.75) -> np.ndarray:
    """[...] win probabilities -> [..., K] HL-Gauss targets: the mass of N(p, (sigma_bins/K)^2)
    falling in each bin, renormalised to sum to 1 (Imani & White 2018; Farebrother et al. 2024)."""
    from math import erf, sqrt

    p = np.asarray(win_prob, dtype=np.float64)[..., None]
    sigma = sigma_bins / num_bins
    cdf = np.vectorize(lambda z: 0.5 * (1 + erf(z / sqrt(2))))((bin_edges(num_bins) - p) / sigma)
    mass = cdf[..., 1:] - cdf[..., :-1]
    return (mass / mass.sum(-1, keepdims=True)).astype(np.float32)


def expected_value(probs: np.ndarray, num_bins: int | None = None) -> np.ndarray:
    """[..., K] bin probabilities -> [...] expected win probability (sum_i p_i * centre_i)."""
    probs = np.asarray(probs)
    return probs @ bin_centers(num_bins or probs.shape[-1])
