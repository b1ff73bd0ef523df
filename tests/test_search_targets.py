"""search/: the policy target self-play trains on (SearchConfig.policy_target), against numpy by hand."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games
import search
from search import SearchConfig, slots

TTT = games.make("tic_tac_toe")


def _linspace_network(value: float = 0.0):
    logits = np.linspace(-3.0, 3.0, TTT.num_actions).astype(np.float32)  # a sharp prior: cell 8 first
    net = lambda params, obs: (jnp.broadcast_to(jnp.asarray(logits), (obs.shape[0], TTT.num_actions)),  # noqa: E731
                               jnp.full(obs.shape[0], value))
    return logits, net


@pytest.mark.parametrize("value_scale", [0.1, 0.5])
def test_completed_q_target_on_a_puct_tree_is_gumbels_improved_policy_by_hand(value_scale):
    """policy_target='completed_q' under PUCT: softmax(prior + 0.5 (c_visit + max N) c_scale completedQ),
    completedQ the visited moves' Q and the others the mixed value, computed here from the tree's
    arrays with numpy (Danihelka et al. 2022, eq. 33 and appendix D)."""
    logits, net = _linspace_network(value=0.2)
    states = TTT.init(jax.random.split(jax.random.PRNGKey(0), 1))
    states = TTT.step(states, jnp.array([4]))
    states = TTT.step(states, jnp.array([0]))
    states = TTT.step(states, jnp.array([8]))  # O to move: wins and losses lie within the tree
    config = SearchConfig(policy="puct", q_transform="fpu", num_simulations=40, root_noise=False,
                          win_check="none", policy_target="completed_q", value_scale=value_scale)
    out, tree = search.make_search(TTT, net, config, return_tree=True)(None, states, jax.random.PRNGKey(1))
    legal = np.asarray(out.slot_actions[0])
    n = int((legal != slots.EMPTY).sum())
    visits = np.asarray(tree.children_visits[0, 0, :n], np.float64)
    q = np.asarray(tree.children_rewards[0, 0, :n] + tree.children_discounts[0, 0, :n] * tree.children_values[0, 0, :n],
                   np.float64)
    prior = np.exp(logits[legal[:n]] - logits[legal[:n]].max())
    prior /= prior.sum()
    visited = visits > 0
    weighted = (prior[visited] * q[visited]).sum() / prior[visited].sum()
    mixed = (float(tree.raw_values[0, 0]) + visits.sum() * weighted) / (visits.sum() + 1)
    completed = np.where(visited, q, mixed)
    sigma = 0.5 * (config.maxvisit_init + visits.max()) * value_scale * completed
    expected = np.exp(np.log(prior) + sigma)
    expected /= expected.sum()
    assert visited.sum() >= 3 and np.ptp(q[visited]) > 0.05  # Q differs between moves: sigma acts
    np.testing.assert_allclose(np.asarray(out.policy_target[0, :n]), expected, rtol=1e-4, atol=1e-6)
    assert (np.asarray(out.policy_target[0, n:]) == 0).all()
    visit_target = search.make_search(TTT, net, dataclasses.replace(config, policy_target=None))(
        None, states, jax.random.PRNGKey(1)).policy_target
    np.testing.assert_allclose(np.asarray(visit_target[0, :n]), visits / visits.sum(), rtol=1e-6)


def test_completed_q_target_starts_from_the_prior_before_root_noise():
    """Four simulations from the empty board reach no result: every Q and the mixed value are 0, so
    the target is the network's own softmax over the legal moves, while the tree's root prior is noisy."""
    logits, net = _linspace_network(value=0.0)
    states = TTT.init(jax.random.split(jax.random.PRNGKey(0), 2))
    config = SearchConfig(policy="puct", num_simulations=4, root_noise=True, policy_target="completed_q")
    out, tree = search.make_search(TTT, net, config, return_tree=True)(None, states, jax.random.PRNGKey(3))
    expected = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(np.asarray(out.policy_target), np.stack([expected] * 2), rtol=1e-5)
    noisy = np.asarray(jax.nn.softmax(tree.children_prior_logits[:, 0]))
    assert np.abs(noisy - expected).max() > 1e-3


def test_policy_target_is_checked_against_the_policy():
    with pytest.raises(ValueError, match="policy_target"):
        SearchConfig(policy_target="counts")
    with pytest.raises(ValueError, match="policy_target 'visits' is PUCT's"):
        SearchConfig(policy="gumbel", policy_target="visits")
    assert SearchConfig(policy="puct").target == "visits" and SearchConfig(policy="gumbel").target == "completed_q"
    assert SearchConfig(policy="puct", policy_target="completed_q").target == "completed_q"
