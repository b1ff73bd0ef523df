"""Playout cap randomization (actors.full_search_fraction): the actor searches a ply fully or fast,
records which, the record keeps the flag through its file frame, the buffer hands it to the learner
as policy_weight, and the loss trains the policy on full plies only (the value on every ply)."""
from __future__ import annotations

import zlib
from pathlib import Path

import jax
import jax.numpy as jnp
import msgpack
import numpy as np
import pytest
from test_learner import FixedNet
from test_replay import make_record

import games
import models
from actors.config import ActorConfig
from actors.selfplay_actor import SelfPlayActor
from configs.loader import load
from learner.config import LearnerConfig
from learner.train import loss_and_metrics
from replay.buffer import ReplayBuffer
from replay.config import ReplayConfig
from replay.record import decode, encode
from selfplay.config import SelfPlayConfig
from selfplay.messages import TrainingBatch

ROOT = Path(__file__).resolve().parents[1]


def test_full_search_flag_round_trips_and_old_records_read_as_full():
    rec = make_record("pcr", 6, seed=2)
    rec.full_search = np.array([1, 0, 0, 1, 0, 1], bool)
    np.testing.assert_array_equal(decode(encode(rec)).full_search, rec.full_search)
    # a schema-2 frame (no full_search field, written before playout caps) reads as all full
    body = msgpack.unpackb(msgpack.unpackb(encode(rec), raw=False)[3], raw=False)
    del body["full_search"]
    payload = msgpack.packb(body, use_bin_type=True)
    old = decode(msgpack.packb(["zcgr", 2, zlib.crc32(payload), payload], use_bin_type=True))
    np.testing.assert_array_equal(old.full_search, np.ones(6, bool))


def test_sample_weights_policies_by_the_plies_full_search(tmp_path):
    buf = ReplayBuffer(tmp_path, ReplayConfig(), num_actions=9, max_legal_actions=9)
    rec = make_record("pcr", 6, seed=4)
    rec.full_search = np.array([1, 0, 1, 0, 0, 1], bool)
    buf.add(encode(rec))
    batch = buf.sample(64, seed=3, unpack=True)
    for b in range(64):
        t = next(t for t in range(6) if np.array_equal(rec.observation(t), batch.observation[b]))
        assert batch.policy_weight[b] == float(rec.full_search[t])


def test_fast_plies_train_the_value_but_not_the_policy():
    # two positions with different policy targets; the second is a fast ply (weight 0)
    net = FixedNet([[0.0, 5.0, np.log(3.0)], [0.0, 0.0, 0.0]], [0.5, -0.5])
    batch = TrainingBatch(observation=jnp.zeros((2, 1)), legal_actions=jnp.array([[0, 2], [0, 1]]),
                          policy=jnp.array([[0.5, 0.5], [1.0, 0.0]]), z=jnp.array([-1.0, 1.0]),
                          policy_weight=jnp.array([1.0, 0.0]))
    _, (_, m) = loss_and_metrics({}, {}, net, LearnerConfig(), batch)
    np.testing.assert_allclose(m["policy_loss"], -(0.5 * np.log(0.25) + 0.5 * np.log(0.75)), rtol=1e-5)
    np.testing.assert_allclose(m["value_loss"], (1.5 ** 2 + 1.5 ** 2) / 2, rtol=1e-6)  # both positions
    _, (_, every) = loss_and_metrics({}, {}, net, LearnerConfig(), batch._replace(policy_weight=None))
    np.testing.assert_allclose(every["policy_loss"], (m["policy_loss"] + np.log(2.0)) / 2, rtol=1e-5)


class _Remote:
    """A stand-in Ray actor method: `.remote(...)` runs it here and returns a real object ref."""

    def __init__(self, fn):
        self.fn = fn

    def remote(self, *args):
        import ray
        return ray.put(self.fn(*args))


def tic_tac_toe_actor(cfg: SelfPlayConfig, seed: int, **kwargs) -> tuple[SelfPlayActor, list]:
    """A SelfPlayActor of `cfg` (tic-tac-toe) in this process; see `local_actor`."""
    return local_actor(cfg, seed, **kwargs)


def local_actor(cfg: SelfPlayConfig, seed: int, **kwargs) -> tuple[SelfPlayActor, list]:
    """A SelfPlayActor of `cfg` (its game) in this process with an untrained network, stand-in
    replay and parameter store; returns it and the list of the records its finished games reach."""
    game = games.make(cfg.game)
    net = models.make_network(cfg.network, game.spec)
    variables = net.init(jax.random.PRNGKey(0), jnp.zeros((1, *game.spec.observation_shape)), train=False)
    records = []
    store = type("Store", (), {"get_newer": _Remote(lambda version: (0, variables) if version < 0 else None)})()
    replay = type("Replay", (), {"add_many": _Remote(lambda frames: records.extend(decode(f) for f in frames))})()
    actor = SelfPlayActor(0, cfg.game, cfg.network, cfg.search, cfg.actors, replay, store, seed=seed, **kwargs)
    return actor, records


@pytest.mark.parametrize("fraction", [0.5, 1.0])
def test_actor_searches_fast_plies_and_records_which(local_ray, fraction):
    cfg = load(SelfPlayConfig, ROOT / "configs/tic_tac_toe.yaml",
               [f"actors.full_search_fraction={fraction}", "actors.fast_simulations=4", "actors.games_per_actor=4"])
    actor, records = tic_tac_toe_actor(cfg, seed=1)
    calls = {"full": 0, "fast": 0}

    def counted(search, kind):
        def run(*args):
            calls[kind] += 1
            return search(*args)
        return run
    actor.search = counted(actor.search, "full")
    if fraction < 1.0:
        assert actor.fast_search is not None
        actor.fast_search = counted(actor.fast_search, "fast")
    else:
        assert actor.fast_search is None
    actor.play(40)
    assert calls["full"] + calls["fast"] == 40 and len(records) >= 8
    flags = np.concatenate([r.full_search for r in records])
    if fraction < 1.0:
        assert 0 < calls["fast"] < 40 and 0.0 < flags.mean() < 1.0  # both kinds of ply, each recorded
    else:
        assert calls["fast"] == 0 and flags.all()


def test_fast_simulations_must_be_below_the_full_budget():
    with pytest.raises(ValueError, match="fast_simulations"):
        load(SelfPlayConfig, ROOT / "configs/tic_tac_toe.yaml",
             ["actors.full_search_fraction=0.25", "actors.fast_simulations=64"])
    with pytest.raises(ValueError, match="full_search_fraction"):
        ActorConfig(full_search_fraction=0.0)
