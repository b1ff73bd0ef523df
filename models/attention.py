"""Multi-head dot-product attention with an optional additive bias on the logits."""
from __future__ import annotations

from typing import Optional

import flax.linen as nn
import jax
import jax.numpy as jnp


class MultiHeadAttention(nn.Module):
    """x [B, T, D] (+ logit_bias [B or 1, H, T, T]) -> [B, T, D]; no mask (full attention)."""

    num_heads: int
    head_dim: int
    use_bias: bool = True  # bias on the q/k/v/out projections (searchless: False, Chessformer: True)

    @nn.compact
    def __call__(self, x: jax.Array, logit_bias: Optional[jax.Array] = None) -> jax.Array:
        dense = lambda name: nn.DenseGeneral((self.num_heads, self.head_dim), use_bias=self.use_bias,
                                             name=name)
        # Heads-first layout and plain batched matmuls: XLA:CPU runs this ~9x faster than the
        # equivalent einsums over [B, T, H, dh] (measured at B=64, T=64, H=6, dh=32).
        q, k, v = (jnp.swapaxes(dense(n)(x), 1, 2) for n in ("query", "key", "value"))  # [B, H, T, dh]
        logits = q @ jnp.swapaxes(k, -1, -2) / jnp.sqrt(self.head_dim).astype(x.dtype)  # [B, H, T, T]
        if logit_bias is not None:
            logits = logits + logit_bias
        weights = jax.nn.softmax(logits.astype(jnp.float32), axis=-1).astype(x.dtype)
        out = jnp.swapaxes(weights @ v, 1, 2)  # [B, T, H, dh]
        return nn.DenseGeneral(x.shape[-1], axis=(-2, -1), use_bias=self.use_bias, name="out")(out)
