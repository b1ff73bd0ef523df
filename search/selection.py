"""Action selection on a slot tree: empty slots are masked at EVERY node, not only at the root.

mctx masks invalid actions at the root only (`tree.root_invalid_actions`); deeper, an empty slot
could still win an argmax (zero prior, but a Q-transform score of a visited legal move can be 0
too). Here a slot is empty iff its prior logit is `slots.EMPTY_LOGIT` (set by the recurrent fn), so
every node knows its own legal moves without storing a mask. Functions take an UNBATCHED tree
(mctx's convention) and return a scalar slot.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mctx

from search import slots
from search.config import SearchConfig


def _masked_argmax(score: jax.Array, prior_logits: jax.Array) -> jax.Array:
    # First maximum on ties (deterministic); a node with no legal slot (terminal) returns slot 0.
    return jnp.argmax(jnp.where(slots.is_empty(prior_logits), -jnp.inf, score)).astype(jnp.int32)


def puct(rng_key, tree: mctx.Tree, node, depth, *, pb_c_init: float, pb_c_base: float,
         qtransform) -> jax.Array:
    """AlphaZero PUCT: argmax Q(s,a) + C(s) P(s,a) sqrt(N(s)) / (1 + N(s,a)).

    C(s) = log((1 + N(s) + c_base) / c_base) + c_init. Same score as `mctx.muzero_action_selection`
    without its random tie-break, so plain-Python references can reproduce the tree exactly.
    """
    del rng_key, depth
    visits = tree.children_visits[node]
    node_visits = tree.node_visits[node]
    logits = tree.children_prior_logits[node]
    c = pb_c_init + jnp.log((node_visits + pb_c_base + 1.0) / pb_c_base)
    exploration = jnp.sqrt(node_visits) * c * jax.nn.softmax(logits) / (visits + 1)
    return _masked_argmax(qtransform(tree, node) + exploration, logits)


def gumbel_interior(rng_key, tree: mctx.Tree, node, depth, *, qtransform) -> jax.Array:
    """Gumbel MuZero's deterministic interior rule: visits follow softmax(prior + completed Q).

    Same score as `mctx.gumbel_muzero_interior_action_selection`, with empty slots masked.
    """
    del rng_key, depth
    visits = tree.children_visits[node]
    logits = tree.children_prior_logits[node]
    improved = jax.nn.softmax(logits + qtransform(tree, node))
    score = improved - visits / (1.0 + jnp.sum(visits))
    return _masked_argmax(score, logits)


def qtransform_fpu(tree: mctx.Tree, node, *, fpu_reduction: float) -> jax.Array:
    """Q in AlphaZero's [0, 1] scale, no normalisation; an unvisited move is worth the node's value
    minus `fpu_reduction` (lc0's first-play urgency), so a tiny value edge between siblings (an
    untrained network's noise) cannot starve the moves not yet tried, while proven values (+-1)
    keep their full weight. [A] for one node of an unbatched tree."""
    q = tree.qvalues(node)
    visited = tree.children_visits[node] > 0
    unvisited = tree.node_values[node] - fpu_reduction
    return (jnp.clip(jnp.where(visited, q, unvisited), -1.0, 1.0) + 1.0) / 2.0


def puct_qtransform(config: SearchConfig):
    if config.q_transform == "fpu":
        return functools.partial(qtransform_fpu, fpu_reduction=config.fpu_reduction)
    if config.q_transform == "min_max":
        return functools.partial(mctx.qtransform_by_min_max, min_value=-1.0, max_value=1.0)
    return mctx.qtransform_by_parent_and_siblings


def gumbel_qtransform(config: SearchConfig):
    """sigma(completed Q) of Gumbel MuZero (also a PUCT tree's "completed_q" target, where "fpu" reads
    as "min_max": both keep Q on its fixed scale). "parent_and_siblings": Q min-max rescaled over the node's
    children (mctx's default), so any spread, a flat value's noise too, becomes a full-scale one;
    "min_max": Q on the fixed [-1, 1] -> [0, 1] scale, so a small spread stays small beside the prior.
    ("fpu" is PUCT's: SearchConfig refuses it for Gumbel, whose unvisited moves take the mixed value.)"""
    if config.q_transform in ("min_max", "fpu"):
        # the raw [-1, 1] Q, halved: [0, 1] up to a constant, which softmax and argmax ignore
        return lambda tree, node: 0.5 * mctx.qtransform_completed_by_mix_value(
            tree, node, value_scale=config.value_scale, maxvisit_init=config.maxvisit_init, rescale_values=False)
    return functools.partial(mctx.qtransform_completed_by_mix_value,
                             value_scale=config.value_scale, maxvisit_init=config.maxvisit_init)


def selection_fns(config: SearchConfig):
    """(root_fn(key, tree, node), interior_fn(key, tree, node, depth)) for `tree_search.search`."""
    if config.policy == "puct":
        interior = functools.partial(puct, pb_c_init=config.pb_c_init, pb_c_base=config.pb_c_base,
                                     qtransform=puct_qtransform(config))
        return functools.partial(interior, depth=0), interior
    qtransform = gumbel_qtransform(config)
    root = functools.partial(mctx.gumbel_muzero_root_action_selection,
                             num_simulations=config.num_simulations,
                             max_num_considered_actions=config.max_num_considered_actions,
                             qtransform=qtransform)
    if config.reuse_tree:
        root = functools.partial(_halving_over_new_visits, num_simulations=config.num_simulations,
                                 max_num_considered_actions=config.max_num_considered_actions,
                                 qtransform=qtransform)
    return root, functools.partial(gumbel_interior, qtransform=qtransform)


def _halving_over_new_visits(rng_key, tree, node, *, num_simulations, max_num_considered_actions, qtransform):
    """Gumbel's root selection on a reused tree: Sequential Halving schedules this search's
    simulations, so it sees each root move's visits less those it started with
    (`tree.extra_data.root_start_visits` [W]); the completed Q values keep every visit."""
    start = tree.extra_data.root_start_visits
    this_search = tree.replace(children_visits=tree.children_visits.at[node].add(-start))
    return mctx.gumbel_muzero_root_action_selection(
        rng_key, this_search, node, num_simulations=num_simulations,
        max_num_considered_actions=max_num_considered_actions,
        qtransform=lambda _, index: qtransform(tree, index))
