"""Losses of the three targets: value bins by cross entropy (one-hot or HL-Gauss) or L2, BC by CE.

The value bins (targets, expected value) are arena.winprob's: one definition for training and play.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from arena.winprob import bin_targets, expected_bin_value
from distill.student import StudentOutput


def loss_fn(pred: StudentOutput, batch: dict, target: str, kind: str) -> jax.Array:
    """Mean loss of a batch. `pred` from student.predict; `kind` "ce", "hl_gauss" or "l2"."""
    if target == "bc":
        if "policy" in batch:
            return -jnp.mean(jnp.sum(batch["policy"] * pred.logprobs, -1))
        return -jnp.mean(jnp.take_along_axis(pred.logprobs, batch["action"][:, None], 1))
    if pred.value is not None:  # a student with a scalar value head (Chessformer SV)
        return jnp.mean((pred.value - batch["value"]) ** 2)
    if kind == "l2":
        return jnp.mean((expected_bin_value(pred.logprobs) - batch["value"]) ** 2)
    targets = bin_targets(batch["value"], pred.logprobs.shape[-1], kind)
    return -jnp.mean(jnp.sum(targets * pred.logprobs, -1))
