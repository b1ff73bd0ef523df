"""search/tree_search.py builds the identical tree to mctx.search (its batched backup is a pure
speed change), on small real games with a random network, for PUCT and Gumbel selection."""
import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

import games
from search import SearchConfig, legal_slots, make_recurrent_fn, selection, slots, tree_search
from search.mcts import Node, _slim


def random_network(game, seed=0):
    """A fixed random linear net: logits and tanh value depend on the observation."""
    obs_size = int(np.prod(game.spec.observation_shape))
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    w_pi = jax.random.normal(k1, (obs_size, game.num_actions))
    w_v = jax.random.normal(k2, (obs_size,)) / np.sqrt(obs_size)

    def evaluate(params, obs):
        x = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
        return x @ w_pi, jnp.tanh(x @ w_v)

    return evaluate


def random_states(game, batch, plies, seed):
    states = game.init(jax.random.split(jax.random.PRNGKey(seed), batch))
    key = jax.random.PRNGKey(seed + 1)
    for _ in range(plies):
        key, sub = jax.random.split(key)
        logits = jnp.where(game.legal_mask(states), 0.0, -jnp.inf)
        nxt = game.step(states, jax.random.categorical(sub, logits))
        states = jax.tree.map(lambda a, b: jnp.where(
            game.terminal(nxt).reshape((-1,) + (1,) * (a.ndim - 1)), a, b), states, nxt)
    return states


def build_root(game, evaluate, states):
    logits, value = evaluate(None, game.observe(states))
    root_slots = legal_slots(game, states)
    root = mctx.RootFnOutput(prior_logits=slots.prior_logits(logits, root_slots), value=value,
                             embedding=Node(_slim(states), root_slots))
    return root, (root_slots == slots.EMPTY).astype(jnp.float32)


SELECTIONS = {
    "mctx_muzero": lambda cfg: (functools.partial(mctx.muzero_action_selection, depth=0),
                                mctx.muzero_action_selection),
    "puct": lambda cfg: selection.selection_fns(cfg),
    "gumbel": lambda cfg: selection.selection_fns(
        SearchConfig(policy="gumbel", num_simulations=cfg.num_simulations,
                     max_num_considered_actions=4)),
}


@pytest.mark.parametrize("game_name,selection_name,max_depth", [
    ("tic_tac_toe", "mctx_muzero", None),
    ("connect_four", "gumbel", 4),  # max_depth: a leaf is re-expanded
])
def test_same_tree_as_mctx(game_name, selection_name, max_depth):
    game = games.make(game_name)
    evaluate = random_network(game)
    states = random_states(game, batch=5, plies=3, seed=7)
    config = SearchConfig(num_simulations=40)
    root_fn, interior_fn = SELECTIONS[selection_name](config)
    root, invalid = build_root(game, evaluate, states)
    extra = None
    if selection_name == "gumbel":
        extra = mctx.GumbelMuZeroExtraData(
            root_gumbel=jax.random.gumbel(jax.random.PRNGKey(3), root.prior_logits.shape))
    kwargs = dict(root=root, recurrent_fn=make_recurrent_fn(game, evaluate),
                  root_action_selection_fn=root_fn, interior_action_selection_fn=interior_fn,
                  num_simulations=config.num_simulations, max_depth=max_depth,
                  invalid_actions=invalid, extra_data=extra)
    key = jax.random.PRNGKey(11)
    ours = jax.jit(lambda k: tree_search.search(None, k, **kwargs))(key)
    theirs = jax.jit(lambda k: mctx.search(None, k, **kwargs))(key)
    assert int(ours.node_visits[:, 0].min()) == config.num_simulations + 1
    for name in ["node_visits", "raw_values", "node_values", "parents", "action_from_parent",
                 "children_index", "children_prior_logits", "children_values", "children_visits",
                 "children_rewards", "children_discounts"]:
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name), err_msg=name)
    np.testing.assert_array_equal(ours.embeddings.slot_actions, theirs.embeddings.slot_actions)
