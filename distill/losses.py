"""Losses of the targets: value bins by cross entropy (one-hot or HL-Gauss) or L2, BC by CE, AV-all
by binary cross entropy of each legal move's win probability (averaged over a board's moves).

The value bins (targets, expected value) are games.winprob's: one definition for training and play.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from distill.student import StudentOutput
from games import winprob


def loss_fn(pred: StudentOutput, batch: dict, target: str, kind: str,
            best_move_weight: float = 0.0) -> jax.Array:
    """Mean loss of a batch. `pred` from student.predict; `kind` "ce", "hl_gauss" or "l2" (value
    bins; AV-all is always binary cross entropy, plus `best_move_weight` x best_move_loss)."""
    if target == "av_all":
        loss = all_moves_loss(pred.move_logits, batch["move_values"], batch.get("value_mask", batch["move_mask"]))
        if best_move_weight:  # toward the policy over the legal moves, else the best of the valued moves
            policy = batch.get("policy")
            mask = batch["move_mask"] if policy is not None else batch.get("value_mask", batch["move_mask"])
            loss += best_move_weight * best_move_loss(pred.move_logits, batch["move_values"], mask, policy)
        return loss
    if target == "bc":
        if "policy" in batch:
            return -jnp.mean(jnp.sum(batch["policy"] * pred.logprobs, -1))
        return -jnp.mean(jnp.take_along_axis(pred.logprobs, batch["action"][:, None], 1))
    if pred.value is not None:  # a student with a scalar value head (Chessformer SV)
        return jnp.mean((pred.value - batch["value"]) ** 2)
    if kind == "l2":
        return jnp.mean((winprob.expected_bin_value(pred.logprobs) - batch["value"]) ** 2)
    targets = winprob.bin_targets(batch["value"], pred.logprobs.shape[-1], kind)
    return -jnp.mean(jnp.sum(targets * pred.logprobs, -1))


def all_moves_loss(logits: jax.Array, values: jax.Array, mask: jax.Array) -> jax.Array:
    """Binary cross entropy of sigmoid(logits) against the win probabilities `values`, both
    [B, 1968], over the legal moves (`mask` 1) of each board, averaged per board then over boards:
    a board with 40 moves weighs as much as one with 4. Boards without a valued move (policy-only
    records) are left out of the mean."""
    bce = optax.sigmoid_binary_cross_entropy(logits.astype(jnp.float32), values)
    moves = jnp.sum(mask, -1)
    per_board = jnp.sum(bce * mask, -1) / jnp.maximum(moves, 1.0)
    return jnp.sum(per_board) / jnp.maximum(jnp.sum(moves > 0), 1.0)


def best_move_loss(logits: jax.Array, values: jax.Array, mask: jax.Array,
                   policy: jax.Array | None = None) -> jax.Array:
    """Softmax cross entropy over each board's legal moves (`mask` 1) against its best move, the
    target shared evenly between moves tied at the best value; all [B, 1968]. With `policy` [B, 1968]
    (a self-play corpus's visit distribution, `data.bc_soft`) the target is that instead: what the
    search chose, where the best completed value is often a lightly visited move's noisy Q.

    The BCE of all_moves_loss scores each move on its own, so a 1% error on a 52% move costs as
    much as one on a 5% move; this term spends the logits' capacity on the order at the top,
    which is what the agent's argmax plays (BC's target, on AV-all's logits)."""
    logits = jnp.where(mask > 0, logits.astype(jnp.float32), -1e9)
    if policy is not None:
        return jnp.mean(optax.softmax_cross_entropy(logits, policy))
    best = jnp.max(jnp.where(mask > 0, values, -1.0), -1, keepdims=True)
    target = ((values >= best) & (mask > 0)).astype(jnp.float32)
    target = target / jnp.maximum(jnp.sum(target, -1, keepdims=True), 1.0)
    return jnp.mean(optax.softmax_cross_entropy(logits, target))
