"""Symmetric evaluation (search/symmetric.py, SearchConfig.symmetric_eval): a network that is not
symmetric becomes exactly mirror-equivariant, equal to the average of its two views, and the search
uses it at the root."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_search_tree import random_states

import games
import models
import search
from games import symmetry
from models.resnet import ResNetConfig
from search import SearchConfig, symmetric

C4 = games.make("connect_four")


def _network():
    net = models.make_network(models.NetworkConfig(resnet=ResNetConfig(num_blocks=1, filters=8, value_hidden=16)),
                              C4.spec)
    obs = C4.observe(C4.init(jax.random.split(jax.random.PRNGKey(0), 1)))
    variables = net.init(jax.random.PRNGKey(1), obs, train=False)
    return variables, lambda v, o: net.apply(v, o, train=False)


def _positions(n=16, plies=9):
    """Random mid-game connect-four states (no two columns alike, so the positions are not symmetric)."""
    return random_states(C4, n, plies, seed=2)


def test_averaged_network_is_the_mean_of_both_views_and_mirror_equivariant():
    variables, evaluate = _network()
    obs = C4.observe(_positions())
    mirrored = jnp.flip(obs, axis=2)  # [B, rows, columns, planes]: columns reversed
    plain = evaluate(variables, obs)
    flipped = evaluate(variables, mirrored)
    assert not np.allclose(plain.value, flipped.value, atol=1e-4)  # the raw network is not symmetric

    averaged = symmetric.averaged(search.network_fn(evaluate), symmetry.of("connect_four"))
    logits, value = averaged(variables, obs)
    expected = np.log((jax.nn.softmax(plain.policy_logits) + jax.nn.softmax(flipped.policy_logits)[:, ::-1]) / 2)
    np.testing.assert_allclose(logits, expected, atol=1e-5)
    np.testing.assert_allclose(value, (plain.value + flipped.value) / 2, atol=1e-6)

    m_logits, m_value = averaged(variables, mirrored)
    np.testing.assert_allclose(m_logits, logits[:, ::-1], atol=1e-5)
    np.testing.assert_allclose(m_value, value, atol=1e-6)


def test_search_root_prior_is_the_averaged_policy():
    variables, evaluate = _network()
    states = _positions(8)
    config = SearchConfig(policy="puct", num_simulations=8, root_noise=False, symmetric_eval=True)
    out = search.make_search(C4, evaluate, config)(variables, states, jax.random.PRNGKey(4))
    logits, _ = symmetric.averaged(search.network_fn(evaluate), symmetry.of("connect_four"))(variables, C4.observe(states))
    legal = np.asarray(out.slot_actions) >= 0
    for b in range(8):
        got = np.asarray(out.prior_logits[b])[legal[b]]
        want = np.asarray(logits[b])[np.asarray(out.slot_actions[b])[legal[b]]]
        np.testing.assert_allclose(got - got.max(), want - want.max(), atol=1e-5)


def test_symmetric_eval_on_a_game_without_symmetries_is_one_clear_error():
    chess = games.make("chess")
    with pytest.raises(ValueError, match="chess has no board symmetries.*symmetric_eval=false"):
        search.make_search(chess, lambda v, o: (jnp.zeros((o.shape[0], 4672)), jnp.zeros(o.shape[0])),
                           SearchConfig(symmetric_eval=True))
