"""Losses of the three targets: value bins by cross entropy (one-hot or HL-Gauss) or L2, BC by CE."""
from __future__ import annotations

import jax
import jax.numpy as jnp


def bin_targets(value: jax.Array, num_bins: int, kind: str, sigma_bins: float = 0.75) -> jax.Array:
    """[B] win probabilities -> [B, K] target distributions ("ce": one-hot, "hl_gauss": smoothed)."""
    if kind == "ce":
        idx = jnp.minimum((value * num_bins).astype(jnp.int32), num_bins - 1)
        return jax.nn.one_hot(idx, num_bins)
    edges = jnp.linspace(0.0, 1.0, num_bins + 1)
    cdf = jax.scipy.special.ndtr((edges[None] - value[:, None]) / (sigma_bins / num_bins))
    mass = cdf[:, 1:] - cdf[:, :-1]
    return mass / mass.sum(-1, keepdims=True)


def expected_bin_value(logprobs: jax.Array) -> jax.Array:
    """[B, K] log-probabilities over bins -> [B] expected win probability."""
    k = logprobs.shape[-1]
    centers = (jnp.arange(k) + 0.5) / k
    return jnp.exp(logprobs) @ centers


def loss_fn(pred: dict, batch: dict, target: str, kind: str) -> jax.Array:
    """Mean loss of a batch. `pred` from student.predict; `kind` "ce", "hl_gauss" or "l2"."""
    if target == "bc":
        if "policy" in batch:
            return -jnp.mean(jnp.sum(batch["policy"] * pred["logprobs"], -1))
        return -jnp.mean(jnp.take_along_axis(pred["logprobs"], batch["action"][:, None], 1))
    if "value" in pred:  # a student with a scalar value head (Chessformer SV)
        return jnp.mean((pred["value"] - batch["value"]) ** 2)
    logprobs = pred["logprobs"]
    if kind == "l2":
        return jnp.mean((expected_bin_value(logprobs) - batch["value"]) ** 2)
    targets = bin_targets(batch["value"], logprobs.shape[-1], kind)
    return -jnp.mean(jnp.sum(targets * logprobs, -1))
