"""Chessformer (Monroe et al., "Chessformer: a unified architecture for chess modeling"), in Flax.

An encoder-only transformer over 64 square tokens in the side-to-move frame (token = rank * 8 + file,
ranks counted from the mover, as pgx and Leela see the board):

    squares [B, 64, F]   F = 112 (games/square_encoding.py) or 119 (pgx's observation planes)
      -> Dense(D), Mish                                  (+ learned square embedding: "absolute" ablation)
      -> L x encoder layer:
             a = MHA(x, logit bias)      bias: GAB [B, H, 64, 64] (default) | 2-D relative | none
             x = LayerNorm(alpha * x + a)
             x = LayerNorm(alpha * x + Dense(D)(Mish(Dense(mlp_dim)(x))))
      -> attention policy head -> pair-space logits -> gathered into the caller's action space
      -> WDL head: mean over squares, LayerNorm, Dense(128), ReLU, Dense(3)

Normalisation: post-LayerNorm with DeepNorm's residual scale alpha = (2 L)^(1/4), as in Leela's
BT4 transformers the paper builds on; Mish activations as Leela. The value in [-1, 1] is
P(win) - P(loss) of the WDL head.
"""
from __future__ import annotations

import dataclasses
from typing import Literal, Optional

import flax.linen as nn
import jax
import jax.numpy as jnp

from configs import check_at_least
from models import attention_policy as ap
from models.activations import mish
from models.attention import MultiHeadAttention
from models.output import NetworkOutput, wdl_to_value
from models.position_bias import AbsolutePositionEmbedding, GeometricAttentionBias, Relative2DBias, SharedBiasProjection

PolicySpace = Literal["pgx", "compact", "uci_vocab"]
PositionEncoding = Literal["gab", "absolute", "relative_2d"]
# Feature that is 1 when black is to move: pgx observation plane 112, square_encoding feature 108.
BLACK_TO_MOVE_FEATURE = {119: 112, 112: 108}


@dataclasses.dataclass(frozen=True)
class ChessformerConfig:
    """Chessformer hyper-parameters (defaults: the 4M ablation model)."""

    num_layers: int = 8  # encoder layers
    embedding_dim: int = 256  # token width D
    head_dim: int = 32  # attention head width (heads = embedding_dim // head_dim)
    mlp_dim: int = 256  # hidden width of each encoder MLP
    input_features: int = 119  # features per square: 119 (pgx observation) or 112 (square_encoding)
    position_encoding: PositionEncoding = "gab"  # "gab", or the "absolute" / "relative_2d" ablations
    gab_d1: int = 8  # GAB per-square compression width
    gab_d2: int = 32  # GAB hidden width
    gab_d3: int = 32  # GAB per-head code width (input of the shared 64x64 projection)
    gab_pooled: bool = False  # GAB average-pools the squares instead of compress+flatten
    policy_dim: int = 0  # query/key width of the attention policy head; 0 = embedding_dim
    value_hidden: int = 128  # hidden width of the WDL head
    policy_space: PolicySpace = "pgx"  # output actions: pgx 4672 ids, compact 1858, or 1968 UCI vocab
    # dtype of the matmuls and activations; parameters, LayerNorm statistics, the softmaxes and every
    # output (policy logits, WDL) stay float32 (bfloat16 pays on accelerators' tensor cores)
    compute_dtype: Literal["float32", "bfloat16"] = "float32"

    def __post_init__(self):
        check_at_least(self, 1, "num_layers", "embedding_dim", "head_dim", "mlp_dim", "input_features", "gab_d1",
                       "gab_d2", "gab_d3", "value_hidden", prefix="chessformer.")
        check_at_least(self, 0, "policy_dim", prefix="chessformer.")  # 0: embedding_dim
        if self.embedding_dim % self.head_dim:
            raise ValueError(f"embedding_dim {self.embedding_dim} is not a multiple of head_dim {self.head_dim}")

    @property
    def num_heads(self) -> int:
        return self.embedding_dim // self.head_dim

    @property
    def dtype(self) -> jnp.dtype:
        return jnp.dtype(self.compute_dtype)


def policy_index(space: PolicySpace):
    """Pair-space gather index for `space`: [A] (side-to-move frame) or [2, A] (per colour)."""
    if space == "pgx":
        return ap.pgx_index()
    if space == "compact":
        return ap.compact_index()
    if space == "uci_vocab":
        return ap.vocab_index()
    raise ValueError(f"unknown policy space '{space}' (known: pgx, compact, uci_vocab)")


class EncoderLayer(nn.Module):
    config: ChessformerConfig

    @nn.compact
    def __call__(self, x: jax.Array, logit_bias: Optional[jax.Array]) -> jax.Array:
        cfg = self.config
        alpha, dt = (2.0 * cfg.num_layers) ** 0.25, cfg.dtype
        a = MultiHeadAttention(cfg.num_heads, cfg.head_dim, dtype=dt, name="attention")(x, logit_bias)
        x = nn.LayerNorm(dtype=dt, name="ln_attention")(alpha * x + a)
        m = nn.Dense(cfg.embedding_dim, dtype=dt, name="mlp_out")(mish(nn.Dense(cfg.mlp_dim, dtype=dt, name="mlp_in")(x)))
        return nn.LayerNorm(dtype=dt, name="ln_mlp")(alpha * x + m)


class WDLHead(nn.Module):
    hidden: int
    dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, x):  # [B, 64, D] -> [B, 3] float32 logits
        h = nn.LayerNorm(dtype=self.dtype)(jnp.mean(x, axis=1))
        return nn.Dense(3, dtype=self.dtype)(nn.relu(nn.Dense(self.hidden, dtype=self.dtype)(h))).astype(jnp.float32)


def pgx_observation_to_squares(obs: jax.Array) -> jax.Array:
    """pgx chess observation [B, 8, 8, 119] (row i = rank 8-i) -> tokens [B, 64, 119], token = rank*8+file."""
    return obs[:, ::-1].reshape(obs.shape[0], 64, obs.shape[-1])


class Chessformer(nn.Module):
    """squares [B, 64, F] (or a pgx observation [B, 8, 8, 119]) -> NetworkOutput.

    policy_logits are over `config.policy_space`; the 1968 vocabulary is in absolute squares, so it
    needs `is_black` [B], read from the side-to-move feature of pgx planes or the 112 encoding.
    """

    config: ChessformerConfig

    @nn.compact
    def __call__(self, squares: jax.Array, train: bool = False, is_black: Optional[jax.Array] = None,
                 return_pairs: bool = False) -> NetworkOutput:
        """`return_pairs=True` gives the raw pair-space logits [B, PAIR_SPACE] as policy_logits."""
        cfg = self.config
        squares = squares.astype(jnp.float32)
        if squares.ndim == 4:  # pgx observation
            squares = pgx_observation_to_squares(squares)
        if squares.shape[1:] != (64, cfg.input_features):
            raise ValueError(f"Chessformer expects squares [B, 64, {cfg.input_features}], got {squares.shape}")
        if is_black is None and cfg.input_features in BLACK_TO_MOVE_FEATURE:
            is_black = squares[:, 0, BLACK_TO_MOVE_FEATURE[cfg.input_features]] > 0.5

        dt = cfg.dtype
        x = mish(nn.Dense(cfg.embedding_dim, dtype=dt, name="embedding")(squares))
        if cfg.position_encoding == "absolute":
            x = AbsolutePositionEmbedding(name="square_embedding")(x)
        shared_projection = SharedBiasProjection(dt, name="gab_projection") if cfg.position_encoding == "gab" else None
        for i in range(cfg.num_layers):
            bias = None
            if cfg.position_encoding == "gab":
                codes = GeometricAttentionBias(cfg.num_heads, cfg.gab_d1, cfg.gab_d2, cfg.gab_d3, cfg.gab_pooled,
                                               dt, name=f"gab_{i}")(x)
                bias = shared_projection(codes)
            elif cfg.position_encoding == "relative_2d":
                bias = Relative2DBias(cfg.num_heads, name=f"relative_bias_{i}")().astype(dt)
            x = EncoderLayer(cfg, name=f"layer_{i}")(x, bias)

        pairs = ap.AttentionPolicyHead(cfg.policy_dim or cfg.embedding_dim, dt, name="policy")(x)
        wdl = WDLHead(cfg.value_hidden, dt, name="wdl")(x)
        if return_pairs:
            return NetworkOutput(pairs, wdl_to_value(wdl), wdl)
        index = policy_index(cfg.policy_space)
        if index.ndim == 2:
            if is_black is None:
                raise ValueError(f"policy_space '{cfg.policy_space}' is in absolute squares: pass is_black [B]")
            policy = ap.gather_by_colour(pairs, index, is_black)
        else:
            policy = ap.gather(pairs, index)
        return NetworkOutput(policy, wdl_to_value(wdl), wdl)
