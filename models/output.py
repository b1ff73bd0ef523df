"""The output every network family gives its caller (search, learner, arena)."""
from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp


class NetworkOutput(NamedTuple):
    """Batched network output (a pytree, so it passes through jit/vmap)."""

    policy_logits: jax.Array  # [B, A] logits over the caller's action space (illegal moves not masked)
    value: jax.Array  # [B] expected outcome in [-1, 1] for the side to move
    wdl_logits: Optional[jax.Array] = None  # [B, 3] win/draw/loss logits for the side to move, or None


def wdl_to_value(wdl_logits: jax.Array) -> jax.Array:
    """[B, 3] win/draw/loss logits -> [B] expected score P(win) - P(loss) in [-1, 1]."""
    probs = jax.nn.softmax(wdl_logits.astype(jnp.float32), axis=-1)
    return probs[..., 0] - probs[..., 2]
