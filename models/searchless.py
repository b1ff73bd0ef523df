"""Searchless chess transformer (Ruoss et al. 2024, "Amortized planning with large-scale transformers").

A decoder-only transformer *without* causal mask over the FEN tokens (games/fen_tokens.py: 77 ints)
and, for action values, one action token (index in the 1968-move vocabulary, games/uci_vocab.py):

    tokens [B, 77] (SV, BC, AV-all) or [B, 78] (AV)
      -> prepend a 0 (the reference code's right shift: context 78 for SV/BC, 79 for AV)
      -> token embedding * sqrt(d) + learned positional embedding (table of 79 positions)
      -> L x [x += MHA(LN(x)); x += SwiGLU(LN(x))]       (pre-LayerNorm, as in the public code)
      -> final LayerNorm (the code's `apply_post_ln=True`) -> Dense(output) at the last position
      -> log-softmax                                        [B, K] value bins or [B, 1968] actions
         (all_action_values: no softmax: [B, 1968] logits, sigmoid = each move's win probability)

Normalisation placement: the public code (searchless_chess/src/transformer.py) normalises *before*
attention and MLP (pre-LN, LLaMA style) and adds one LayerNorm after the last block; we do the same.
Attention and MLP projections have no biases; the MLP is SwiGLU with hidden width 4 * d.
"""
from __future__ import annotations

import dataclasses
from typing import Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

from configs import check_at_least
from models.attention import MultiHeadAttention

# action_value: (FEN, move) -> bins (the paper); all_action_values: FEN -> one win-probability logit
# per vocabulary move (every legal move's value from one pass: ~30 AV targets per forward on CPU)
Predictor = Literal["action_value", "all_action_values", "state_value", "behavioral_cloning"]
FEN_TOKENS = 77  # length of the tokenised FEN (games/fen_tokens.py)
NUM_UCI_ACTIONS = 1968  # size of the searchless action vocabulary (games/uci_vocab.py)


@dataclasses.dataclass(frozen=True)
class SearchlessConfig:
    """Hyper-parameters of the searchless transformer (defaults: the 9M model, action values)."""

    predictor: Predictor = "action_value"  # AV: FEN+action -> bins; SV: FEN -> bins; BC: FEN -> action
    num_layers: int = 8  # transformer blocks
    num_heads: int = 8  # attention heads (head dim = embedding_dim // num_heads)
    embedding_dim: int = 256  # model width d
    widening_factor: int = 4  # SwiGLU hidden width = widening_factor * d
    num_return_buckets: int = 128  # K value bins of the AV/SV output (uniform on [0, 1] win prob.)
    vocab_size: int = NUM_UCI_ACTIONS  # input vocabulary (FEN characters and actions share it)
    max_sequence_length: int = FEN_TOKENS + 2  # learned positional table size (79, as the paper)
    apply_post_ln: bool = True  # final LayerNorm after the last block (reference code default)
    emb_init_scale: float = 0.02  # stddev of the truncated-normal token embedding init
    # dtype of the matmuls and activations; parameters, LayerNorm statistics, the softmaxes and the
    # output stay float32 (bfloat16 pays on accelerators' tensor cores)
    compute_dtype: Literal["float32", "bfloat16"] = "float32"

    def __post_init__(self):
        check_at_least(self, 1, "num_layers", "num_heads", "embedding_dim", "widening_factor", "num_return_buckets",
                       "vocab_size", "max_sequence_length", prefix="searchless.")
        if self.emb_init_scale <= 0:
            raise ValueError(f"searchless.emb_init_scale must be > 0, got {self.emb_init_scale:g}")
        if self.embedding_dim % self.num_heads:
            raise ValueError(f"embedding_dim {self.embedding_dim} is not divisible by num_heads {self.num_heads}")

    @property
    def output_size(self) -> int:
        if self.predictor in ("behavioral_cloning", "all_action_values"):
            return NUM_UCI_ACTIONS
        return self.num_return_buckets

    @property
    def input_length(self) -> int:
        """Tokens the caller passes: 77 FEN tokens (+1 action token for AV)."""
        return FEN_TOKENS + (1 if self.predictor == "action_value" else 0)

    @property
    def context_length(self) -> int:
        """Sequence length inside the model: 79 (AV) or 78 (SV, BC)."""
        return self.input_length + 1


class SwiGLU(nn.Module):
    hidden: int
    dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, x):
        dense = lambda width, name: nn.Dense(width, use_bias=False, dtype=self.dtype, name=name)
        gate = dense(self.hidden, "gate")(x)
        up = dense(self.hidden, "up")(x)
        return dense(x.shape[-1], "down")(nn.silu(gate) * up)


class SearchlessTransformer(nn.Module):
    """tokens [B, input_length] int -> log-probabilities [B, output_size] (value bins or actions),
    or for all_action_values win-probability logits [B, 1968]."""

    config: SearchlessConfig

    @nn.compact
    def __call__(self, tokens: jax.Array, train: bool = False) -> jax.Array:
        cfg = self.config
        if tokens.ndim != 2 or tokens.shape[1] != cfg.input_length:
            raise ValueError(f"{cfg.predictor} expects tokens [B, {cfg.input_length}], got {tokens.shape}")
        bos = jnp.zeros((tokens.shape[0], 1), tokens.dtype)
        seq = jnp.concatenate([bos, tokens], axis=1)  # [B, T] with T = context_length
        d, dt = cfg.embedding_dim, jnp.dtype(cfg.compute_dtype)
        embed = nn.Embed(cfg.vocab_size, d, embedding_init=nn.initializers.truncated_normal(cfg.emb_init_scale),
                         name="token_embedding")
        pos = nn.Embed(cfg.max_sequence_length, d, name="position_embedding")
        x = (embed(seq) * jnp.sqrt(d) + pos(jnp.arange(seq.shape[1]))[None]).astype(dt)
        norm = lambda name: nn.LayerNorm(dtype=dt, name=name)
        for i in range(cfg.num_layers):
            x = x + MultiHeadAttention(cfg.num_heads, d // cfg.num_heads, use_bias=False, dtype=dt,
                                       name=f"attention_{i}")(norm(f"ln_attention_{i}")(x))
            x = x + SwiGLU(cfg.widening_factor * d, dt, name=f"mlp_{i}")(norm(f"ln_mlp_{i}")(x))
        if cfg.apply_post_ln:
            x = norm("ln_final")(x)
        logits = nn.Dense(cfg.output_size, dtype=dt, name="output")(x[:, -1]).astype(jnp.float32)
        if cfg.predictor == "all_action_values":
            return logits
        return jax.nn.log_softmax(logits, axis=-1)
