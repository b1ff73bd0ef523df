"""models.evaluation: the network as the search calls it, from a module, a config or a network directory."""
import dataclasses

import jax
import numpy as np
import pytest

import games
import models
from models import network_dir

TINY = models.NetworkConfig(resnet=models.ResNetConfig(num_blocks=1, filters=8, value_hidden=8))


def _equal(a, b) -> bool:
    same = jax.tree.map(lambda x, y: bool(np.array_equal(x, y)) and np.asarray(x).dtype == np.asarray(y).dtype, a, b)
    return jax.tree.structure(a) == jax.tree.structure(b) and jax.tree.all(same)


@pytest.mark.parametrize("game_name, cfg", [
    ("connect_four", dataclasses.replace(TINY, input_features=("parity", "threats"))),  # bool observations, features
    ("tic_tac_toe", TINY),
])
def test_untrained_network_is_a_games_init_and_evaluates_as_apply(game_name, cfg):
    game = games.make(game_name)
    states = game.init(jax.random.split(jax.random.PRNGKey(3), 4))
    obs = game.observe(states)
    net = models.make_network(cfg, game.spec)
    ref = net.init(jax.random.PRNGKey(3), obs, train=False)  # the sites' own init, a real batch
    ev = models.load_evaluation(cfg, game.spec, seed=3)
    assert _equal(ev.variables, ref)
    assert (ev.config, ev.game, ev.metadata) == (cfg, game_name, {})
    out, want = ev.evaluate(ev.variables, obs), net.apply(ref, obs, train=False)
    assert isinstance(out, models.NetworkOutput)
    np.testing.assert_array_equal(out.policy_logits, want.policy_logits)
    np.testing.assert_array_equal(out.value, want.value)
    np.testing.assert_array_equal(models.evaluation_fn(net)(ref, obs).value, want.value)
    with pytest.raises(ValueError, match="game_spec"):
        models.load_evaluation(cfg)


def test_network_directory_evaluates_as_its_module(tmp_path):
    game = games.make("connect_four")
    net = models.make_network(TINY, game.spec)
    obs = game.observe(game.init(jax.random.split(jax.random.PRNGKey(0), 3)))
    variables = net.init(jax.random.PRNGKey(5), obs, train=False)
    network_dir.save(tmp_path / "net", TINY, variables, game="connect_four", metadata={"step": 7})
    ev = models.load_evaluation(tmp_path / "net")
    assert (ev.game, ev.metadata, ev.config) == ("connect_four", {"step": 7}, TINY)
    assert _equal(ev.variables, variables)
    assert all(isinstance(x, jax.Array) for x in jax.tree.leaves(ev.variables))
    want = net.apply(variables, obs, train=False)
    np.testing.assert_allclose(jax.jit(ev.evaluate)(ev.variables, obs).policy_logits, want.policy_logits, atol=1e-6)
    with pytest.raises(FileNotFoundError):
        models.load_evaluation(tmp_path / "missing")
