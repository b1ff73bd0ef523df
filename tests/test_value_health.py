"""Value health (docs/selfplay.md#value-health): the learner's value figures against hand-computed
cases, what replay batches say about the games trained on, and the collapse warning on a real
tic-tac-toe ResNet whose value head is forced dead (and not on the healthy one)."""
from __future__ import annotations

import dataclasses
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_replay import make_record

import games
import models
from configs.loader import load
from learner.config import LearnerConfig
from learner.health import ValueHealthMonitor, value_head_collapsing
from learner.messages import TrainMetrics, TrainResult
from learner.train import ENDINGS as TRAINED_ENDINGS
from learner.train import explained_variance, init_train_state, loss_and_metrics, make_train_step
from models import NetworkOutput
from replay.buffer import ReplayBuffer
from replay.config import ReplayConfig
from replay.messages import ENDINGS
from replay.record import encode
from selfplay.config import SelfPlayConfig
from selfplay.messages import TrainingBatch

ROOT = Path(__file__).resolve().parents[1]


class FixedNet:
    """Known outputs, no intermediates (like a family that sows nothing)."""

    def __init__(self, value):
        self.value = jnp.asarray(value, jnp.float32)

    def apply(self, variables, obs, train, mutable):
        return NetworkOutput(jnp.zeros((len(self.value), 2)), self.value, None), {"batch_stats": {}}


def fixed_batch(z):
    n = len(z)
    return TrainingBatch(observation=jnp.zeros((n, 1)), legal_actions=jnp.tile(jnp.array([[0, 1]]), (n, 1)),
                         policy=jnp.full((n, 2), 0.5), z=jnp.asarray(z, jnp.float32))


def test_explained_variance_by_hand():
    # Var(z) = 0.5; z - v = (0.5, -0.5, 0, 0), Var = 0.125: 1 - 0.125 / 0.5 = 0.75
    _, (_, m) = loss_and_metrics({}, {}, FixedNet([0.5, -0.5, 0.0, 0.0]), LearnerConfig(), fixed_batch([1, -1, 0, 0]))
    np.testing.assert_allclose(m["value_explained"], 0.75, rtol=1e-6)
    assert "value_active" not in m  # nothing sown: no figure rather than a made-up one
    np.testing.assert_allclose(explained_variance(jnp.array([1.0, -1.0]), jnp.array([0.0, 0.0])), 0.0, atol=1e-7)
    np.testing.assert_allclose(explained_variance(jnp.array([1.0, -1.0]), jnp.array([-1.0, 1.0])), -3.0, rtol=1e-6)
    # every z equal: the batch cannot tell (NaN), and TrainMetrics carries None, not NaN
    _, (_, m) = loss_and_metrics({}, {}, FixedNet([0.5, 0.1]), LearnerConfig(), fixed_batch([0, 0]))
    assert np.isnan(m["value_explained"])
    host = {k: float(v) for k, v in jax.device_get(m).items()}
    assert TrainMetrics.of({**host, "learning_rate": 0.1, "param_norm": 1.0}).value_explained is None


def ttt_net(value_channels: int = 1):
    game = games.make("tic_tac_toe")
    cfg = load(SelfPlayConfig, ROOT / "configs/tic_tac_toe.yaml").network
    cfg = dataclasses.replace(cfg, resnet=dataclasses.replace(cfg.resnet, value_channels=value_channels))
    return models.make_network(cfg, game.spec)


def value_bn(params) -> str:
    """The value head's BatchNorm: the ResNet's last top-level one (after the policy head's)."""
    names = [k for k in params if k.startswith("BatchNorm_")]
    return max(names, key=lambda k: int(k.split("_")[1]))


def with_value_bn(variables, scale, bias):
    params = dict(variables["params"])
    name = value_bn(params)
    params[name] = {"scale": jnp.asarray(scale, jnp.float32), "bias": jnp.asarray(bias, jnp.float32)}
    return {**variables, "params": params}


def with_value_hidden(variables, bias):
    """The value head's dense hidden layer (the ResNet's second-last Dense: the value output is the
    last) made blind to its input: kernel 0, so each unit outputs its `bias` for every position."""
    params = dict(variables["params"])
    name = sorted((k for k in params if k.startswith("Dense_")), key=lambda k: int(k.split("_")[1]))[-2]
    bias = jnp.asarray(bias, jnp.float32)
    assert params[name]["bias"].shape == bias.shape
    params[name] = {"kernel": jnp.zeros_like(params[name]["kernel"]), "bias": bias}
    return {**variables, "params": params}


def value_hidden_bias(variables) -> np.ndarray:
    params = variables["params"]
    name = sorted((k for k in params if k.startswith("Dense_")), key=lambda k: int(k.split("_")[1]))[-2]
    return np.asarray(params[name]["bias"])


def random_batch(n: int = 64, seed: int = 0) -> TrainingBatch:
    rng = np.random.default_rng(seed)
    legal = np.tile(np.arange(9, dtype=np.int32), (n, 1))
    return TrainingBatch(observation=rng.random((n, 3, 3, 2)) < 0.4, legal_actions=legal,
                         policy=np.full((n, 9), 1 / 9, np.float32),
                         z=rng.choice([-1.0, 0.0, 1.0], n).astype(np.float32))


def test_active_fraction_of_a_tiny_resnet_by_hand():
    """Three value channels whose BatchNorm outputs a constant (scale 0): bias +1 passes the ReLU at
    every square, -1 and 0 at none: 2 of 3 channels active -> 2/3 of the 3 x 9 units."""
    net = ttt_net(value_channels=3)
    batch = random_batch()
    variables = net.init(jax.random.PRNGKey(0), batch.observation[:1])
    variables = with_value_bn(variables, [0.0, 0.0, 0.0], [1.0, -1.0, 1.0])
    width = len(value_hidden_bias(variables))
    variables = with_value_hidden(variables, np.ones(width))  # every dense unit passes: the conv layer decides
    _, (_, m) = loss_and_metrics(variables["params"], variables["batch_stats"], net, LearnerConfig(), batch)
    np.testing.assert_allclose(m["value_active"], 2 / 3, rtol=1e-6)
    # the dense layer passing fewer (a quarter of its units, at every position) decides instead
    quarter = np.where(np.arange(width) < width // 4, 1.0, -1.0)
    _, (_, m) = loss_and_metrics(with_value_hidden(variables, quarter)["params"], variables["batch_stats"], net,
                                 LearnerConfig(), batch)
    np.testing.assert_allclose(m["value_active"], (width // 4) / width, rtol=1e-6)
    variables = with_value_bn(variables, [0.0, 0.0, 0.0], [0.0, -1.0, 0.0])  # 0 does not pass a ReLU
    _, (_, m) = loss_and_metrics(variables["params"], variables["batch_stats"], net, LearnerConfig(), batch)
    assert float(m["value_active"]) == 0.0
    # a fresh head: BatchNorm (train mode) centres each channel, about half its units pass
    fresh = net.init(jax.random.PRNGKey(1), batch.observation[:1])
    _, (_, m) = loss_and_metrics(fresh["params"], fresh["batch_stats"], net, LearnerConfig(), batch)
    assert 0.2 < float(m["value_active"]) < 0.8


def train_metrics(net, variables, batch, steps: int = 1) -> TrainMetrics:
    """The train step's metrics (as the Learner reads them) after `steps` steps on `batch`."""
    cfg = LearnerConfig(lr_values=(0.01,), lr_boundaries=(), batch_size=len(batch.z))
    variables = jax.tree.map(jnp.array, variables)  # copies: the step donates its state's buffers
    state = init_train_state(net, cfg, batch.observation[:1], jax.random.PRNGKey(0), variables=variables)
    step = make_train_step(net, cfg)
    for _ in range(steps):
        state, m = step(state, batch)
    return TrainMetrics.of(jax.device_get(m))


def test_the_warning_fires_on_a_dead_value_head_and_not_on_a_healthy_one(capsys):
    net = ttt_net()
    batch = random_batch(128)
    healthy = net.init(jax.random.PRNGKey(0), batch.observation[:1])
    # the H200 run's death (docs/experiments/2026-11-27-one-gpu-h200.md): the value channel's
    # BatchNorm moved every unit below zero, so the ReLU passes nothing and v is one constant
    dead = with_value_bn(healthy, [1.0], [-100.0])
    start, alive, collapsed = (train_metrics(net, healthy, batch), train_metrics(net, healthy, batch, steps=3),
                               train_metrics(net, dead, batch))
    assert start.value_std > 1e-3 and 0.2 < start.value_active < 0.8 and start.value_explained is not None
    assert collapsed.value_active == 0.0 and collapsed.value_std < 1e-6
    assert abs(collapsed.value_explained) < 1e-3  # a constant v explains none of the outcomes
    # the other layer's death: the 1x1 conv's channels alive, the dense layer behind them silent, v one
    # constant (the conv's share alone read ~50% here); the figure is the less active layer's
    hidden_dead = with_value_hidden(healthy, np.full(len(value_hidden_bias(healthy)), -100.0))
    silent = train_metrics(net, hidden_dead, batch, steps=3)
    assert silent.value_active == 0.0 and silent.value_std < 1e-6

    monitor = ValueHealthMonitor()
    assert monitor.observe(10, start) is None  # the run's first figures
    assert monitor.observe(100, collapsed) is None  # too early to tell (MIN_STEPS after the start)
    assert monitor.observe(400, alive) is None
    line = monitor.observe(450, collapsed)
    assert line.startswith("value head collapsing at step 450: value std ")
    assert "(0% of step 10's), 0% of its units active" in line
    for name in ("learner.q_ratio", "learner.lr_values", "network.resnet.value_channels", "outcome mix"):
        assert name in line
    assert monitor.observe(500, collapsed) is None  # once
    summary = monitor.summary(collapsed)
    assert (summary.warning, summary.warning_step, summary.start_step) == (line, 450, 10)
    assert summary.value_std_vs_start < 1e-3 and summary.value_active == 0.0

    # a head dead at the run's first figures (a warm start's seed 0 at lr 0.02: std 0.000 at step
    # 100) is said then: its floors need no start to compare with
    born_dead = ValueHealthMonitor()
    line = born_dead.observe(100, collapsed)
    assert line.startswith("value head collapsing at step 100: value std ") and "(its first figures)" in line
    assert born_dead.summary(collapsed).warning_step == 100 and born_dead.observe(400, collapsed) is None

    healthy_run = ValueHealthMonitor()
    for step in (10, 400, 5000):
        assert healthy_run.observe(step, alive if step > 10 else start) is None
    assert healthy_run.summary(alive).warning is None

    # a resumed run compares with the run's start (kept in the checkpoint's meta), not its own
    resumed = ValueHealthMonitor.from_meta(monitor.meta())
    assert resumed.value_std_start == start.value_std and resumed.observe(900, collapsed) is not None

    # the run prints it on stderr, once
    from selfplay.run import _Session
    session = types.SimpleNamespace(value_health=ValueHealthMonitor())
    for step, m in ((10, start), (400, collapsed), (420, collapsed)):
        _Session._check_value_head(session, TrainResult(step=step, metrics=m))
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("value head collapsing at step 400")


def test_dead_units_beside_a_live_linear_path_are_not_a_collapse():
    """A ResNet whose value also reads the input's board means (`value_input_skip`) with its head's units
    forced dead: while the linear term is zero (as initialised) the value is one constant and the
    warning fires; once the term has weights the value spreads, and a monitor that knows the path
    (`linear_path`, from NetworkConfig.value_reads_input) stays quiet where a plain one still fires."""
    game = games.make("tic_tac_toe")
    cfg = load(SelfPlayConfig, ROOT / "configs/tic_tac_toe.yaml").network
    cfg = dataclasses.replace(cfg, resnet=dataclasses.replace(cfg.resnet, value_input_skip=True))
    assert cfg.value_reads_input and not dataclasses.replace(cfg, family="chessformer").value_reads_input
    net = models.make_network(cfg, game.spec)
    batch = random_batch(128)
    healthy = net.init(jax.random.PRNGKey(0), batch.observation[:1])
    dead = with_value_bn(healthy, [1.0], [-100.0])
    params = dict(dead["params"])
    params["value_skip"] = {**params["value_skip"], "kernel": jnp.ones_like(params["value_skip"]["kernel"])}
    linear = {**dead, "params": params}
    start = train_metrics(net, healthy, batch)
    flat, live = train_metrics(net, dead, batch), train_metrics(net, linear, batch)
    assert flat.value_active == live.value_active == 0.0
    assert flat.value_std < 1e-3 < start.value_std / 4 < live.value_std
    for linear_path, fires in ((False, True), (True, False)):
        monitor = ValueHealthMonitor.from_meta({}, linear_path=linear_path)
        monitor.observe(10, start)
        assert (monitor.observe(400, live) is not None) is fires
    knows = ValueHealthMonitor(linear_path=True)
    knows.observe(10, start)
    assert knows.observe(400, flat).startswith("value head collapsing at step 400")


@pytest.mark.parametrize("steps, std, active, explained, fires", [
    (199, 0.0, 0.0, 0.0, False),  # before MIN_STEPS nothing fires
    (200, 0.0249, 0.5, 0.049, True),  # below 25% of the start's 0.1, explaining next to nothing
    (200, 0.0251, 0.5, 0.0, False),
    (200, 0.0249, 0.5, 0.051, False),  # narrower but explaining the outcomes: games turned to draws
    (200, 0.0249, 0.5, None, False),  # every outcome of the batch equal: a constant v is right
    (200, 0.3, 0.01, 0.6, True),  # units dead, whatever the spread
    (200, 0.3, 0.011, 0.0, False),
    (5000, 0.02, None, 0.0, True),  # a family without the units' figure: spread and explained
])
def test_collapse_thresholds(steps, std, active, explained, fires):
    assert value_head_collapsing(steps, std, 0.1, active, explained) is fires


@pytest.mark.parametrize("std, explained, fires", [
    (0.0, 0.0, True),  # one constant (a saturated tanh, units alive) though the start was as flat
    (0.00099, 0.0, True),
    (0.0011, 0.0, False),  # no narrower than the start: nothing to compare
    (0.0, None, False),  # every outcome equal: a constant is right
])
def test_a_flat_value_collapses_whatever_its_start(std, explained, fires):
    assert value_head_collapsing(200, std, 0.001, 0.46, explained) is fires


def test_batches_say_how_their_games_ended_and_who_played_them(tmp_path):
    buf = ReplayBuffer(tmp_path, ReplayConfig(), num_actions=9, max_legal_actions=9)
    games_ = {"won": (4, "rules", [1.0, -1.0], [0, 6]), "resign": (2, "resign", [1.0, -1.0], [8, 8]),
              "cap": (6, "cap", [0.0, 0.0], [9, 9]), "drawn": (8, "rules", [0.0, 0.0], [9, 9]),
              "material": (5, "adjudicated", [-1.0, 1.0], [9, 9])}
    for name, (plies, termination, rewards, versions) in games_.items():
        rec = make_record(name, plies)
        rec.termination, rec.rewards = termination, np.asarray(rewards, np.float32)
        rec.param_versions = np.asarray(versions)
        buf.add(encode(rec))
    batch = buf.sample(4000, seed=3)
    counts = np.bincount(batch.ending, minlength=5) / 4000
    np.testing.assert_allclose(counts, np.array([4, 2, 6, 8, 5]) / 25, atol=0.03)  # positions of each game
    assert ENDINGS == TRAINED_ENDINGS == ("won_by_rules", "resigned", "capped", "drawn_by_rules", "adjudicated")
    # versions: the won game's 4 plies between versions 0 and 6 interpolate to 0, 2, 4, 6
    assert set(batch.version[batch.ending == 0]) == {0, 2, 4, 6}
    assert set(batch.version[batch.ending != 0]) <= {8, 9}

    # the train step reads them: shares of the batch and the mean age at its step
    small = TrainingBatch(observation=np.zeros((4, 3, 3, 2), bool), legal_actions=np.tile(np.arange(9, dtype=np.int32), (4, 1)),
                          policy=np.full((4, 9), 1 / 9, np.float32), z=np.array([1, -1, 0, 0], np.float32),
                          ending=np.array([0, 4, 1, 2], np.int8), version=np.array([0, 2, 4, 6], np.int32))
    net = ttt_net()
    cfg = LearnerConfig(lr_values=(0.01,), lr_boundaries=(), batch_size=4)
    state = init_train_state(net, cfg, small.observation[:1], jax.random.PRNGKey(0))
    state = state._replace(step=jnp.asarray(10, jnp.int32))
    _, m = make_train_step(net, cfg)(state, small)
    m = TrainMetrics.of(jax.device_get(m))
    assert (m.trained_won_by_rules, m.trained_resigned, m.trained_capped, m.trained_drawn_by_rules,
            m.trained_adjudicated) == (0.25, 0.25, 0.25, 0.0, 0.25)
    assert m.sample_age == 10 - 3  # the step that trains on them minus the mean version
