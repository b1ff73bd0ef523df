"""Dirichlet root noise over the LEGAL moves only (AlphaZero), not over the whole action axis."""
from __future__ import annotations

import jax
import jax.numpy as jnp

from search import slots


def add_dirichlet(key: jax.Array, prior_logits: jax.Array, *, alpha: float,
                  fraction: float) -> jax.Array:
    """prior_logits [B, W] (EMPTY_LOGIT in unused slots) -> noisy logits [B, W].

    P' = (1 - fraction) P + fraction Dir(alpha) on the legal slots; unused slots stay EMPTY_LOGIT.
    """
    empty = slots.is_empty(prior_logits)
    gamma = jnp.where(empty, 0.0, jax.random.gamma(key, alpha, prior_logits.shape))
    total = jnp.sum(gamma, axis=1, keepdims=True)
    noise = gamma / jnp.where(total > 0, total, 1.0)
    mixed = (1.0 - fraction) * jax.nn.softmax(prior_logits) + fraction * noise
    logits = jnp.log(jnp.maximum(mixed, jnp.finfo(mixed.dtype).tiny))
    return jnp.where(empty, slots.EMPTY_LOGIT, logits)
