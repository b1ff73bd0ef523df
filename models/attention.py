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
        q, k, v = dense("query")(x), dense("key")(x), dense("value")(x)  # [B, T, H, dh]
        logits = jnp.einsum("bthd,bshd->bhts", q, k) / jnp.sqrt(self.head_dim).astype(x.dtype)
        if logit_bias is not None:
            logits = logits + logit_bias
        weights = jax.nn.softmax(logits.astype(jnp.float32), axis=-1).astype(x.dtype)
        out = jnp.einsum("bhts,bshd->bthd", weights, v)  # [B, T, H, dh]
        return nn.DenseGeneral(x.shape[-1], axis=(-2, -1), use_bias=self.use_bias, name="out")(out)
