"""Learner: loss against hand-computed values, loss decreases on a fixed batch, schedule (its checkpoints:
test_learner_checkpoint.py)."""
from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games
import models
from configs.loader import load
from games import symmetry
from learner.config import LearnerConfig
from learner.train import (
    init_train_state,
    learning_rate,
    legal_log_probs,
    loss_and_metrics,
    make_optimizer,
    make_train_step,
    value_target,
)
from models import NetworkOutput
from selfplay.config import SelfPlayConfig
from selfplay.messages import TrainingBatch

ROOT = Path(__file__).resolve().parents[1]


def ttt_setup(batch: int = 32, seed: int = 0):
    game = games.make("tic_tac_toe")
    net = models.make_network(load(SelfPlayConfig, ROOT / "configs/tic_tac_toe.yaml").network, game.spec)
    rng = np.random.default_rng(seed)
    obs = rng.random((batch, 3, 3, 2)) < 0.3
    legal = np.full((batch, 9), -1, np.int32)
    policy = np.zeros((batch, 9), np.float32)
    for b in range(batch):
        n = rng.integers(2, 9)
        legal[b, :n] = np.sort(rng.choice(9, n, replace=False))
        policy[b, :n] = rng.dirichlet(np.ones(n))
    z = rng.choice([-1.0, 0.0, 1.0], size=batch).astype(np.float32)
    return game, net, TrainingBatch(observation=obs, legal_actions=legal, policy=policy, z=z)


def test_legal_log_probs_normalise_over_legal_moves_and_ignore_pads():
    logits = jnp.array([[0.0, 1.0, 7.0, 3.0, 1.0], [2.0, 0.0, 0.0, 0.0, 0.0]])
    log_p, valid = legal_log_probs(logits, jnp.array([[1, 4, -1], [0, -1, -1]]))
    np.testing.assert_array_equal(valid, [[1, 1, 0], [1, 0, 0]])
    np.testing.assert_allclose(np.exp(log_p[0, :2]), [0.5, 0.5], rtol=1e-6)  # action 2's logit 7 is not legal
    np.testing.assert_allclose(log_p[1, 0], 0.0, atol=1e-6)  # the only legal move has p = 1
    assert float(jnp.exp(log_p[0, 2])) == 0.0


class FixedNet:
    """A stand-in module with known outputs, to check the loss by hand."""

    def __init__(self, logits, value, wdl=None):
        self.out = NetworkOutput(jnp.asarray(logits), jnp.asarray(value), None if wdl is None else jnp.asarray(wdl))

    def apply(self, variables, obs, train, mutable):
        return self.out, {"batch_stats": {}}


def test_loss_matches_hand_computation():
    # One position, legal moves {0, 2} of 3, logits (0, 5, ln 3): p over legal = (1/4, 3/4).
    net = FixedNet([[0.0, 5.0, np.log(3.0)]], [0.5], wdl=[[0.0, 0.0, 0.0]])
    batch = TrainingBatch(observation=jnp.zeros((1, 1)), legal_actions=jnp.array([[0, 2]]),
                          policy=jnp.array([[0.5, 0.5]]), z=jnp.array([-1.0]))
    loss, (_, m) = loss_and_metrics({}, {}, net, LearnerConfig(), batch)
    policy_loss = -(0.5 * np.log(0.25) + 0.5 * np.log(0.75))
    np.testing.assert_allclose(m["policy_loss"], policy_loss, rtol=1e-5)
    np.testing.assert_allclose(m["value_loss"], 1.5 ** 2, rtol=1e-6)
    np.testing.assert_allclose(m["wdl_loss"], np.log(3.0), rtol=1e-5)  # uniform WDL, target "loss"
    np.testing.assert_allclose(m["policy_entropy"], -(0.25 * np.log(0.25) + 0.75 * np.log(0.75)), rtol=1e-5)
    np.testing.assert_allclose(loss, policy_loss + 2.25 + np.log(3.0), rtol=1e-5)


def test_q_ratio_mixes_the_root_value_into_the_value_target():
    net = FixedNet([[0.0, 0.0], [0.0, 0.0]], [0.5, 0.0])
    batch = TrainingBatch(observation=jnp.zeros((2, 1)), legal_actions=jnp.array([[0, 1], [0, 1]]),
                          policy=jnp.array([[0.5, 0.5], [0.5, 0.5]]), z=jnp.array([-1.0, 0.0]),
                          q=jnp.array([0.6, -0.8]))
    _, (_, m) = loss_and_metrics({}, {}, net, LearnerConfig(q_ratio=0.25), batch)
    targets = 0.75 * np.array([-1.0, 0.0]) + 0.25 * np.array([0.6, -0.8])  # (-0.6, -0.2)
    np.testing.assert_allclose(m["value_loss"], np.mean((targets - [0.5, 0.0]) ** 2), rtol=1e-6)
    _, (_, m) = loss_and_metrics({}, {}, net, LearnerConfig(), batch)  # q_ratio 0: z alone
    np.testing.assert_allclose(m["value_loss"], (1.5 ** 2 + 0.0) / 2, rtol=1e-6)
    np.testing.assert_allclose(m["value_std"], 0.25, rtol=1e-6)  # v = (0.5, 0.0): the spread a collapse zeroes
    with pytest.raises(ValueError, match="root value q"):
        loss_and_metrics({}, {}, net, LearnerConfig(q_ratio=0.5), batch._replace(q=None))
    with pytest.raises(ValueError, match="q_ratio"):
        LearnerConfig(q_ratio=1.5)


def test_q_ratio_after_explained_trains_on_z_alone_until_the_value_explains_that_share():
    z, q = jnp.array([1.0, -1.0, 0.0, 0.0]), jnp.array([0.2, 0.2, 0.2, 0.2])  # Var(z) = 0.5
    batch = TrainingBatch(observation=jnp.zeros((4, 1)), legal_actions=jnp.zeros((4, 1), jnp.int32),
                          policy=jnp.ones((4, 1)), z=z, q=q)
    gated = LearnerConfig(q_ratio=0.5, q_ratio_after_explained=0.5)
    mixed = 0.5 * np.asarray(z) + 0.5 * np.asarray(q)
    flat = jnp.zeros(4)  # explains 0 of the outcomes: z alone
    np.testing.assert_allclose(value_target(gated, batch, flat), z)
    weak = jnp.array([0.2, -0.2, 0.0, 0.0])  # Var(z - v) = 0.32: explains 0.36 < 0.5, still z alone
    np.testing.assert_allclose(value_target(gated, batch, weak), z)
    good = jnp.array([0.5, -0.5, 0.0, 0.0])  # explains 0.75 >= 0.5: q mixed in at q_ratio
    np.testing.assert_allclose(value_target(gated, batch, good), mixed, rtol=1e-6)
    draws = batch._replace(z=jnp.zeros(4))  # every z equal: nothing to explain (NaN), z alone
    np.testing.assert_allclose(value_target(gated, draws, good), jnp.zeros(4))
    # off (the default): q on every batch, whatever v explains
    np.testing.assert_allclose(value_target(LearnerConfig(q_ratio=0.5), batch, flat), mixed, rtol=1e-6)
    # inside the loss the gate reads the network's own value: v = 0.5, 0 explains nothing here
    net = FixedNet(np.zeros((4, 1)), [0.5, 0.5, 0.5, 0.5])
    _, (_, m) = loss_and_metrics({}, {}, net, gated, batch)
    np.testing.assert_allclose(m["value_loss"], np.mean((np.asarray(z) - 0.5) ** 2), rtol=1e-6)
    with pytest.raises(ValueError, match="q_ratio_after_explained"):
        LearnerConfig(q_ratio_after_explained=0.1)  # gates nothing: q_ratio is 0
    with pytest.raises(ValueError, match="q_ratio_after_explained"):
        LearnerConfig(q_ratio=0.5, q_ratio_after_explained=1.0)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_decay_norms_false_leaves_batchnorm_and_biases_out_of_weight_decay(optimizer):
    _, net, batch = ttt_setup(batch=4)
    params = net.init(jax.random.PRNGKey(0), batch.observation[:1])["params"]
    zero = jax.tree.map(jnp.zeros_like, params)

    def update(decay_norms):  # the first update on a zero gradient: weight decay alone
        cfg = LearnerConfig(optimizer=optimizer, lr_values=(0.1,), lr_boundaries=(), l2=1e-2, decay_norms=decay_norms)
        tx = make_optimizer(cfg)
        updates, _ = tx.update(zero, tx.init(params), params)
        return {"/".join(str(getattr(k, "key", k)) for k in path): np.asarray(u)
                for path, u in jax.tree_util.tree_flatten_with_path(updates)[0]}

    decay_all, kernels = update(True), update(False)
    bn = [k for k in decay_all if "BatchNorm" in k]
    assert any(k.endswith("scale") for k in bn) and any(k.endswith("bias") for k in bn)
    bn_scale = next(k for k in bn if k.endswith("scale"))  # 1 at init: decay moves it by lr * 2c
    np.testing.assert_allclose(decay_all[bn_scale], -0.1 * 2e-2, rtol=1e-5)
    for k in bn:
        assert not kernels[k].any(), k  # excluded: a zero gradient moves them not at all
    dense_bias = [k for k in decay_all if k.startswith("Dense") and k.endswith("bias")]
    assert dense_bias and not any(kernels[k].any() for k in dense_bias)
    conv = [k for k in decay_all if k.endswith("kernel")]
    assert conv and all(kernels[k].any() and np.array_equal(kernels[k], decay_all[k]) for k in conv)


@pytest.mark.parametrize("name", ["value_weight", "wdl_weight", "l2"])
def test_negative_loss_weights_are_refused(name):
    with pytest.raises(ValueError, match=f"learner.{name} must be >= 0"):
        LearnerConfig(**{name: -0.5})
    assert getattr(LearnerConfig(**{name: 0.0}), name) == 0.0  # 0 turns a term off


@pytest.mark.parametrize("optimizer, lr", [("sgd", 0.05), ("adam", 3e-3)])
def test_loss_decreases_on_a_fixed_batch(optimizer, lr):
    game, net, batch = ttt_setup()
    cfg = LearnerConfig(lr_values=(lr,), lr_boundaries=(), batch_size=32, optimizer=optimizer)
    state = init_train_state(net, cfg, batch.observation[:1], jax.random.PRNGKey(0))
    step = make_train_step(net, cfg)
    losses = []
    for _ in range(60):
        state, m = step(state, batch)
        losses.append(float(m["loss"]))
    assert int(state.step) == 60
    assert losses[-1] < 0.6 * losses[0], losses[::10]


def test_adam_first_step_moves_each_weight_by_the_learning_rate_against_its_gradient():
    """Adam's first update is lr * g / (|g| + eps) = lr * sign(g), plus the decoupled decay lr * 2c * theta."""
    game, net, batch = ttt_setup()
    lr, l2 = 1e-3, 1e-4
    cfg = LearnerConfig(lr_values=(lr,), lr_boundaries=(), batch_size=32, optimizer="adam", l2=l2)
    state = init_train_state(net, cfg, batch.observation[:1], jax.random.PRNGKey(0))
    grads = jax.grad(loss_and_metrics, has_aux=True)(state.params, state.batch_stats, net, cfg, batch)[0]
    before = [np.asarray(p, np.float64) for p in jax.tree.leaves(state.params)]  # the step donates state
    new = make_train_step(net, cfg)(state, batch)[0]
    for g, p0, p1 in zip(jax.tree.leaves(grads), before, jax.tree.leaves(new.params)):
        g, p1 = np.asarray(g, np.float64), np.asarray(p1, np.float64)
        big = np.abs(g) > 1e-4  # eps 1e-8 is negligible against these
        expected = p0 - lr * np.sign(g) - lr * 2 * l2 * p0
        np.testing.assert_allclose(p1[big], expected[big], rtol=1e-3, atol=1e-6)


def test_piecewise_schedule():
    sched = learning_rate(LearnerConfig(lr_values=(0.2, 0.02, 0.002, 0.0002), lr_boundaries=(10, 20, 30)))
    np.testing.assert_allclose([sched(s) for s in (0, 9, 10, 19, 20, 30, 99)],
                               [0.2, 0.2, 0.02, 0.02, 0.002, 0.0002, 0.0002], rtol=1e-5)
    frozen = learning_rate(LearnerConfig(lr_values=(0.1, 0.0, 0.01), lr_boundaries=(5, 8)))  # a stage of 0
    np.testing.assert_allclose([frozen(s) for s in (4, 5, 7, 8)], [0.1, 0.0, 0.0, 0.01], rtol=1e-6)
    with pytest.raises(ValueError, match="lr_values must be >= 0"):
        LearnerConfig(lr_values=(-0.1,), lr_boundaries=())


def test_warmup_rises_linearly_then_follows_the_steps():
    """Step k of a 4-step warm-up runs at (k + 1) / 4 of the stepped rate; the stages keep their
    boundaries (a joined schedule would shift them by the warm-up)."""
    sched = learning_rate(LearnerConfig(lr_values=(0.2, 0.02), lr_boundaries=(10,), lr_warmup_steps=4))
    np.testing.assert_allclose([sched(s) for s in (0, 1, 2, 3, 4, 9, 10)],
                               [0.05, 0.1, 0.15, 0.2, 0.2, 0.2, 0.02], rtol=1e-5)


def _connect_four_lesson(augment: bool, steps: int = 40):
    """Trains on one lopsided connect-four position (stones in the left columns) whose target is
    column 0; returns the policy over the 7 columns of the position and of its mirror image."""
    game = games.make("connect_four")
    net = models.make_network(load(SelfPlayConfig, ROOT / "configs/connect_four.yaml").network, game.spec)
    obs = np.zeros((6, 7, 2), np.float32)
    obs[5, 0, 0] = obs[5, 1, 1] = obs[4, 0, 0] = obs[5, 2, 1] = 1.0
    batch = TrainingBatch(observation=np.repeat(obs[None], 32, 0),
                          legal_actions=np.tile(np.arange(7, dtype=np.int32), (32, 1)),
                          policy=np.tile(np.eye(7, dtype=np.float32)[0], (32, 1)), z=np.zeros(32, np.float32))
    cfg = LearnerConfig(batch_size=32, lr_values=(0.05,), lr_boundaries=(), augment=augment)
    state = init_train_state(net, cfg, batch.observation[:1], jax.random.PRNGKey(0))
    step = make_train_step(net, cfg, symmetry.of("connect_four"))
    for _ in range(steps):
        state, _ = step(state, batch)
    variables = {"params": state.params, "batch_stats": state.batch_stats}
    logits = net.apply(variables, jnp.asarray(np.stack([obs, obs[:, ::-1]])), train=False).policy_logits
    return np.asarray(jax.nn.softmax(logits, axis=-1))


def test_augmented_training_teaches_the_mirror_image_it_never_saw():
    seen, mirror = _connect_four_lesson(augment=True)
    assert seen[0] > 0.9 and mirror[6] > 0.9  # column 0 on the board, column 6 on its mirror
    seen, mirror = _connect_four_lesson(augment=False)
    assert seen[0] > 0.9 and mirror[6] < 0.1  # without it: column 0 on the mirror too (0.985 measured)


def test_a_packed_batch_trains_exactly_as_its_plain_observations():
    """The replay buffer sends observations bit-packed (games/packing.py); the step unpacks them on
    the device: the same update and metrics as the plain batch, bit for bit."""
    from games import packing
    game, net, batch = ttt_setup()
    cfg = LearnerConfig(lr_values=(0.05,), lr_boundaries=(), batch_size=32)
    spec = jax.ShapeDtypeStruct(game.spec.observation_shape, game.observation_dtype)
    packed = batch._replace(observation=packing.pack(np.asarray(batch.observation)))
    fresh = lambda: init_train_state(net, cfg, batch.observation[:1], jax.random.PRNGKey(0))
    plain_state, plain = make_train_step(net, cfg)(fresh(), batch)
    packed_state, got = make_train_step(net, cfg, obs_spec=spec)(fresh(), packed)
    for a, b in zip(jax.tree.leaves(plain_state.params), jax.tree.leaves(packed_state.params)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert {k: float(v) for k, v in plain.items()} == {k: float(v) for k, v in got.items()}
    with pytest.raises(ValueError, match="obs_spec"):
        make_train_step(net, cfg)(fresh(), packed)


