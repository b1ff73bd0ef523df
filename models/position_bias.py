"""Position information for Chessformer attention: Geometric Attention Bias and two ablations.

GeometricAttentionBias (GAB; Leela's "smolgen"), per encoder layer, from that layer's tokens:
    x [B, 64, D] -> per-square Dense(d1) -> flatten [B, 64*d1]       (pooled variant: mean over squares [B, D])
      -> Dense(d2), GELU, LayerNorm -> Dense(H*d3), GELU, LayerNorm -> [B, H, d3]
      -> SharedBiasProjection (one Dense(d3 -> 64*64) shared by all layers and heads) -> [B, H, 64, 64]
The bias is added to the attention logits, so the geometry each head sees depends on the position.

Ablations: `AbsolutePositionEmbedding` (a learned [64, D] table added to the input tokens, no
logit bias) and `Relative2DBias` (a learned per-layer, per-head bias indexed by the rank and file
offsets between two squares, [H, 15, 15] -> [1, H, 64, 64], the same for every position).
"""
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


class GeometricAttentionBias(nn.Module):
    """x [B, 64, D] -> per-head codes [B, H, d3]; `SharedBiasProjection` turns them into [B, H, 64, 64]."""

    num_heads: int
    d1: int  # per-square compression width (unused when pooled)
    d2: int  # hidden width
    d3: int  # per-head code width
    pooled: bool  # average-pool the squares instead of compressing and flattening them
    dtype: jnp.dtype = jnp.float32  # of the matmuls and activations (parameters stay float32)

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        batch, dt = x.shape[0], self.dtype
        if self.pooled:
            h = jnp.mean(x, axis=1)  # [B, D]
        else:
            h = nn.Dense(self.d1, use_bias=False, dtype=dt, name="compress")(x).reshape(batch, -1)  # [B, 64*d1]
        h = nn.LayerNorm(dtype=dt, name="ln_hidden")(nn.gelu(nn.Dense(self.d2, dtype=dt, name="hidden")(h)))
        h = nn.LayerNorm(dtype=dt, name="ln_codes")(nn.gelu(nn.Dense(self.num_heads * self.d3, dtype=dt,
                                                                     name="codes")(h)))
        return h.reshape(batch, self.num_heads, self.d3)


class SharedBiasProjection(nn.Module):
    """codes [B, H, d3] -> attention logit bias [B, H, 64, 64]; one instance serves all layers."""

    dtype: jnp.dtype = jnp.float32  # of the projection's matmul (its parameters stay float32)

    @nn.compact
    def __call__(self, codes: jax.Array) -> jax.Array:
        bias = nn.Dense(64 * 64, dtype=self.dtype, name="projection")(codes)
        return bias.reshape(*codes.shape[:2], 64, 64)


class AbsolutePositionEmbedding(nn.Module):
    """x [B, 64, D] -> x + learned embedding of each square."""

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        table = self.param("embedding", nn.initializers.normal(0.02), (64, x.shape[-1]))
        return x + table[None].astype(x.dtype)


def _relative_offsets() -> np.ndarray:
    """[64, 64, 2] (rank offset + 7, file offset + 7) between query square i and key square j."""
    squares = np.arange(64)
    rank, file = squares // 8, squares % 8
    return np.stack([rank[:, None] - rank[None] + 7, file[:, None] - file[None] + 7], axis=-1)


class Relative2DBias(nn.Module):
    """-> [1, H, 64, 64]: a learned bias per head and (rank offset, file offset) pair."""

    num_heads: int

    @nn.compact
    def __call__(self) -> jax.Array:
        table = self.param("table", nn.initializers.zeros, (self.num_heads, 15, 15))
        offsets = _relative_offsets()
        return table[:, offsets[..., 0], offsets[..., 1]][None]
