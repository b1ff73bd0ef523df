"""Data-parallel self-play learner (`learner.devices`): the Learner with its state replicated over
two CPU devices and each replay batch split between them trains the same parameters, batch-norm
statistics and losses as the one-device Learner (up to summation order), with augmentation on,
publishes on schedule, reports both devices, and refuses a device count or batch that does not fit.

Two CPU devices need XLA_FLAGS before jax starts, so the check runs in a fresh interpreter."""
import textwrap
from pathlib import Path

import pytest
from conftest import TWO_DEVICE_CHECKS

from learner.config import LearnerConfig

ROOT = Path(__file__).resolve().parent.parent

CHECK = textwrap.dedent("""
    import dataclasses, sys
    import jax, numpy as np, ray
    from configs.loader import load
    from learner.learner import Learner
    from learner.train import init_train_state
    from selfplay.config import SelfPlayConfig
    from selfplay.messages import TrainingBatch
    sys.path.insert(0, "tests")
    from test_learner import ttt_setup

    assert len(jax.devices()) == 2, jax.devices()
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)

    n = 64
    game, net, data = ttt_setup(n)  # random tic-tac-toe positions, legal moves and targets

    @ray.remote
    class Replay:  # samples a fixed set of positions by seed, as replay/ does its window
        def sample(self, batch_size, seed, opponent=False):
            idx = np.random.default_rng(seed).integers(0, n, batch_size)
            return TrainingBatch(*(None if x is None else x[idx] for x in data))

    @ray.remote
    class Store:
        def __init__(self):
            self.versions = []
        def publish(self, version, variables):
            self.versions.append(version)
        def published(self):
            return self.versions

    cfg = load(SelfPlayConfig, "configs/tic_tac_toe.yaml", [
        "learner.batch_size=16", "learner.publish_every=2", "learner.augment=true", "learner.lr_values=[0.1,0.1]"])
    state = jax.device_get(init_train_state(net, cfg.learner, data.observation[:1].astype(np.float32),
                                            jax.random.PRNGKey(0)))

    def trained(devices):
        store = Store.remote()
        learner = Learner("tic_tac_toe", cfg.network, dataclasses.replace(cfg.learner, devices=devices),
                          state, Replay.remote(), store)
        result = learner.train(5)
        assert result.step == 5 and ray.get(store.published.remote()) == [2, 4], result
        return learner, result

    one, result_one = trained(1)
    two, result_two = trained(2)
    assert one.location().device == "cpu:0" and two.location().device == "cpu:0,cpu:1", two.location()
    sharded = jax.tree.leaves(two._state.params)[0]
    assert len(sharded.sharding.device_set) == 2 and sharded.sharding.is_fully_replicated
    np.testing.assert_allclose(result_one.metrics.loss, result_two.metrics.loss, rtol=1e-4)
    a, b = one.train_state(), two.train_state()
    moved = jax.tree.map(lambda x, y: float(np.max(np.abs(x - y))), a.params, state.params)
    assert max(jax.tree.leaves(moved)) > 1e-3  # five real updates
    for x, y in ((a.params, b.params), (a.batch_stats, b.batch_stats), (a.opt_state, b.opt_state)):
        jax.tree.map(lambda u, v: np.testing.assert_allclose(u, v, rtol=1e-3, atol=1e-5), x, y)
    assert int(a.step) == int(b.step) == 5

    try:
        Learner("tic_tac_toe", cfg.network, dataclasses.replace(cfg.learner, devices=4), state, None, None)
    except ValueError as e:
        assert "learner.devices=4 but only 2 cpu device(s)" in str(e), e
    else:
        raise AssertionError("learner.devices=4 on two devices trained")
    print("ok")
""")
TWO_DEVICE_CHECKS["learner"] = CHECK


def test_two_device_learner_trains_as_one_device_learner(two_device_checks):
    assert two_device_checks["learner"] == "ok", two_device_checks["learner"]


def test_learner_devices_must_split_the_batch():
    with pytest.raises(ValueError, match="does not split over learner.devices=3"):
        LearnerConfig(batch_size=256, devices=3)
    with pytest.raises(ValueError, match="learner.devices must be >= 0"):
        LearnerConfig(devices=-1)
    with pytest.raises(ValueError, match="set learner.num_gpus=4"):  # an actor sees only its own GPUs
        LearnerConfig(placement="actor", num_gpus=2, devices=4)
    assert LearnerConfig(batch_size=256, devices=0).devices == 0  # every visible device, checked when built
