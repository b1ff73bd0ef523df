"""Legal-move slots: the search tree's action axis.

A position's legal pgx actions are packed, in increasing action id, into a fixed number W of slots
(W = game.spec.max_legal_actions; chess 218), so the tree stores [nodes, W] per game instead of
[nodes, 4672]. Slot k of a position holds its k-th legal action; unused slots hold EMPTY (-1).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

EMPTY = -1  # slot_actions value of an unused slot
# Prior logit of an unused slot: finite (softmax of an all-empty row stays NaN-free, as in mctx)
# and below any real logit, so its probability is exactly 0.
EMPTY_LOGIT = float(jnp.finfo(jnp.float32).min)


def slot_actions(legal_mask: jax.Array, width: int) -> jax.Array:
    """legal_mask [B, A] bool -> [B, W] int32 pgx action per slot, EMPTY where unused."""
    pick = lambda row: jnp.nonzero(row, size=width, fill_value=EMPTY)[0]
    return jax.vmap(pick)(legal_mask).astype(jnp.int32)


def gather(values: jax.Array, actions: jax.Array, fill) -> jax.Array:
    """values [B, A] at actions [B, W] -> [B, W]; `fill` where the slot is EMPTY."""
    picked = jnp.take_along_axis(values, jnp.maximum(actions, 0), axis=1)
    return jnp.where(actions == EMPTY, jnp.asarray(fill, values.dtype), picked)


def scatter(values: jax.Array, actions: jax.Array, num_actions: int, fill=0) -> jax.Array:
    """Slot values [B, W] -> [B, num_actions] indexed by pgx action; `fill` at actions not in a slot."""
    batch = values.shape[0]
    out = jnp.full((batch, num_actions + 1), fill, dtype=values.dtype)  # last column: EMPTY's bin
    index = jnp.where(actions == EMPTY, num_actions, actions)
    out = out.at[jnp.arange(batch)[:, None], index].set(values)
    return out[:, :num_actions]


def prior_logits(logits: jax.Array, actions: jax.Array) -> jax.Array:
    """Network logits [B, A] -> slot prior logits [B, W]: max-shifted, EMPTY_LOGIT in unused slots."""
    slots = gather(logits.astype(jnp.float32), actions, -jnp.inf)
    top = jnp.max(slots, axis=1, keepdims=True)
    top = jnp.where(jnp.isfinite(top), top, 0.0)  # a row without legal moves (terminal position)
    # A legal move keeps a logit far above EMPTY_LOGIT even if the network gave it -inf.
    return jnp.where(actions == EMPTY, EMPTY_LOGIT, jnp.maximum(slots - top, -1e30))


def is_empty(prior_logits: jax.Array) -> jax.Array:
    """Which slots of a tree row are unused, recognised by their EMPTY_LOGIT prior. Any shape."""
    return prior_logits <= EMPTY_LOGIT
