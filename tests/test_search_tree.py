"""search/tree_search.py builds the identical tree to mctx.search (its batched backup is a pure
speed change), on small real games with a random network, for PUCT and Gumbel selection."""
import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

import games
from search import SearchConfig, legal_slots, make_recurrent_fn, make_search, selection, slots, tree_search
from search.game_search import Node, _slim


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
    @jax.jit  # one compile, not one per op and ply
    def ply(states, sub):
        logits = jnp.where(game.legal_mask(states), 0.0, -jnp.inf)
        nxt = game.step(states, jax.random.categorical(sub, logits))
        return jax.tree.map(lambda a, b: jnp.where(
            game.terminal(nxt).reshape((-1,) + (1,) * (a.ndim - 1)), a, b), states, nxt)

    states = game.init(jax.random.split(jax.random.PRNGKey(seed), batch))
    key = jax.random.PRNGKey(seed + 1)
    for _ in range(plies):
        key, sub = jax.random.split(key)
        states = ply(states, sub)
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
    ("connect_four", "puct", None),  # our PUCT selection (search/selection.py) in both searches
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


@pytest.mark.parametrize("policy", ["puct", "gumbel"])
def test_stopping_at_certain_edges_keeps_the_root_statistics(policy):
    """A walk that ends on a certain edge (terminal or proven) backs up the same exact value as
    mctx's walk on below it, so the root's visits and values are unchanged, while the tree stays
    within the game's length instead of growing a chain under each decided line."""
    game = games.make("connect_four")
    evaluate = random_network(game)
    states = random_states(game, batch=6, plies=24, seed=3)  # late middlegames: many decided lines
    config = SearchConfig(policy=policy, num_simulations=200, max_num_considered_actions=7,
                          win_check="tree")
    root_fn, interior_fn = selection.selection_fns(config)
    root, invalid = build_root(game, evaluate, states)
    extra = None
    if policy == "gumbel":
        extra = mctx.GumbelMuZeroExtraData(
            root_gumbel=jax.random.gumbel(jax.random.PRNGKey(3), root.prior_logits.shape))
    kwargs = dict(root=root, recurrent_fn=make_recurrent_fn(game, evaluate, config),
                  root_action_selection_fn=root_fn, interior_action_selection_fn=interior_fn,
                  num_simulations=config.num_simulations, invalid_actions=invalid,
                  extra_data=extra, certainty=True)
    run = lambda stop: jax.jit(lambda k: tree_search.search(None, k, stop_at_certain=stop, **kwargs))(
        jax.random.PRNGKey(5))
    stopped, walked = run(True), run(False)
    root_of = lambda t, x: np.asarray(getattr(t, x)[:, 0])
    for name in ["node_visits", "children_visits", "children_rewards", "children_discounts"]:
        np.testing.assert_array_equal(root_of(stopped, name), root_of(walked, name), err_msg=name)
    np.testing.assert_allclose(root_of(stopped, "node_values"), root_of(walked, "node_values"), atol=1e-5)
    q = lambda t: np.asarray(t.qvalues(jnp.zeros(6, jnp.int32)))
    np.testing.assert_allclose(q(stopped), q(walked), atol=1e-5)
    remaining = 42 - 24  # plies left in a connect-four game after 24
    stopped_depth = tree_search.deepest_node(np.asarray(stopped.parents))
    walked_depth = tree_search.deepest_node(np.asarray(walked.parents))
    assert max(stopped_depth) <= remaining
    assert max(walked_depth) > remaining  # the chains below decided lines that stopping avoids


def test_search_config_stop_at_certain_reaches_the_walk():
    """`SearchConfig.stop_at_certain=False` gives mctx's walk through `make_search` (the deep-search
    bench compares the two): the same root visits, and only the old walk runs past the game's end."""
    game = games.make("connect_four")
    evaluate = random_network(game)
    states = random_states(game, batch=4, plies=24, seed=3)
    trees = {}
    for stop in (True, False):
        config = SearchConfig(policy="puct", num_simulations=200, win_check="tree", root_noise=False,
                              temperature_plies=0, stop_at_certain=stop)
        search = make_search(game, evaluate, config, return_tree=True)
        trees[stop] = search(None, states, jax.random.PRNGKey(1))[1]
    np.testing.assert_array_equal(np.asarray(trees[True].children_visits[:, 0]),
                                  np.asarray(trees[False].children_visits[:, 0]))
    depth = {stop: max(tree_search.deepest_node(np.asarray(t.parents))) for stop, t in trees.items()}
    assert depth[True] <= 42 - 24 < depth[False]
