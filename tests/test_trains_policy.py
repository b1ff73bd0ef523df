"""learner.trains: policy: the steps move only what the value does not read, so a warm run's value stays
its start's to the bit while the policy learns."""
from __future__ import annotations

from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_learner import ttt_setup

import games
from learner.config import LearnerConfig
from learner.train import frozen_leaves, init_train_state, make_train_step, read_by_value
from models import NetworkOutput, network_dir

ROOT = Path(__file__).resolve().parents[1]


def trained_names(tree) -> set[str]:
    """The module/array names a frozen_leaves tree leaves to train."""
    return {jax.tree_util.keystr(path) for path, keep in jax.tree_util.tree_flatten_with_path(tree)[0] if not keep}


def test_the_chess_resnet_trains_its_73_plane_policy_head_alone():
    shipped = network_dir.load(ROOT / "networks/chess_distilled_4x64")
    game = games.make("chess")
    obs = jnp.zeros((1, *game.spec.observation_shape), game.observation_dtype)
    frozen = frozen_leaves(shipped.module(), LearnerConfig(trains="policy"), shipped.variables, obs)
    # models/resnet.py's policy_head: 3x3 conv (Conv_1), its BatchNorm (BatchNorm_1), 1x1 conv to 73 planes (Conv_2)
    assert trained_names(frozen) == {"['BatchNorm_1']['bias']", "['BatchNorm_1']['scale']",
                                     "['Conv_1']['kernel']", "['Conv_2']['bias']", "['Conv_2']['kernel']"}
    assert frozen_leaves(shipped.module(), LearnerConfig(), shipped.variables, obs) is None  # trains: all


def test_policy_steps_keep_the_value_to_the_bit_and_teach_the_policy():
    game, net, batch = ttt_setup()
    cfg = LearnerConfig(lr_values=(0.3,), lr_boundaries=(), batch_size=32, trains="policy")
    state = init_train_state(net, cfg, batch.observation[:1], jax.random.PRNGKey(0))
    frozen = frozen_leaves(net, cfg, {"params": state.params, "batch_stats": state.batch_stats}, batch.observation[:1])
    step = make_train_step(net, cfg, frozen=frozen)

    def play(s):  # the network as the search reads it: running statistics
        return net.apply({"params": s.params, "batch_stats": s.batch_stats}, batch.observation, train=False)

    before, before_stats = jax.device_get(play(state)), jax.device_get(state.batch_stats)
    losses = []
    for _ in range(60):
        state, metrics = step(state, batch)
        losses.append(float(metrics["policy_loss"]))
    after = jax.device_get(play(state))
    np.testing.assert_array_equal(after.value, before.value)
    p = np.asarray(batch.policy)
    entropy = float(-np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=-1).mean())
    kl = [loss - entropy for loss in losses]  # cross entropy = the targets' entropy + KL(target || policy)
    assert kl[-1] < 0.6 * kl[0], kl[::10]
    assert np.abs(after.policy_logits - before.policy_logits).max() > 0.1
    jax.tree.map(np.testing.assert_array_equal, jax.device_get(state.batch_stats), before_stats)  # as it plays
    # and trains=all on the same batch moves the value (the test above is not vacuous)
    full = LearnerConfig(lr_values=(0.05,), lr_boundaries=(), batch_size=32)
    state = init_train_state(net, full, batch.observation[:1], jax.random.PRNGKey(0))
    state, _ = make_train_step(net, full)(state, batch)
    assert not np.array_equal(jax.device_get(play(state)).value, before.value)


class _SharedHead(nn.Module):
    """A network whose value reads every parameter: policy and value from one dense layer."""

    @nn.compact
    def __call__(self, obs, train: bool = False):
        h = nn.Dense(10)(obs.reshape(obs.shape[0], -1).astype(jnp.float32))
        return NetworkOutput(h[:, :9], jnp.tanh(h[:, 9]), None)


def test_read_by_value_sees_through_a_dead_relu_and_a_network_without_a_policy_head_is_refused():
    obs = jnp.ones((2, 3, 3, 2))
    net = _SharedHead()
    variables = net.init(jax.random.PRNGKey(0), obs)
    dead = jax.tree.map(jnp.zeros_like, variables)  # every weight 0: the value's gradient is 0, yet it reads them
    assert all(jax.tree.leaves(read_by_value(net, dead, obs)["params"]))
    with pytest.raises(ValueError, match="nothing would train; use learner.trains=all"):
        frozen_leaves(net, LearnerConfig(trains="policy"), variables, obs)


def test_trains_names_a_known_choice_and_the_step_needs_its_frozen_leaves():
    with pytest.raises(ValueError, match=r"learner.trains must be one of \('all', 'policy'\)"):
        LearnerConfig(trains="value")
    _, net, _ = ttt_setup(batch=2)
    with pytest.raises(ValueError, match="needs make_train_step"):
        make_train_step(net, LearnerConfig(trains="policy"))
