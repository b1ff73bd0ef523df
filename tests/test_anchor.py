"""Anchor boards (replay/anchor.py): oracle-labelled boards mixed into the replay buffer's samples."""
import jax.numpy as jnp
import numpy as np
import pytest
from test_replay import make_record

from games import packing
from learner.train import batch_figures
from replay.anchor import ANCHOR_ENDING, AnchorSet, mix
from replay.buffer import ReplayBuffer
from replay.config import ReplayConfig
from replay.record import encode

W = 9  # tic-tac-toe's move slots, as make_record's games


def _anchor(n=5, seed=1):
    """n boards of obs [3, 3, 2] whose legal moves are 0..4 and whose policy is one-hot on move i % 5."""
    rng = np.random.default_rng(seed)
    obs = (rng.random((n, 3, 3, 2)) < 0.4).astype(np.float32)
    legal = np.full((n, W), -1, np.int32)
    legal[:, :5] = np.arange(5)
    policy = np.zeros((n, W), np.float32)
    policy[np.arange(n), np.arange(n) % 5] = 1.0
    return obs, legal, policy, np.linspace(-1, 1, n).astype(np.float32)


def _buffer(tmp_path, fraction):
    cfg = ReplayConfig(window_positions=1000, anchor_records="annotations" if fraction else "",
                       anchor_fraction=fraction)
    buf = ReplayBuffer(tmp_path, cfg, num_actions=9, max_legal_actions=W)
    for i in range(4):
        buf.add(encode(make_record(f"g{i}", 6, seed=i)))
    return buf


def test_an_anchor_set_keeps_its_boards_exactly():
    obs, legal, policy, z = _anchor()
    anchor = AnchorSet.of(obs, legal, policy, z)
    batch = anchor.sample(64, np.random.default_rng(0))
    assert isinstance(batch.observation, packing.PackedObservation) and len(batch.z) == 64
    rows = [int(np.flatnonzero(z == v)[0]) for v in batch.z]  # each sampled row is one of the boards
    np.testing.assert_array_equal(packing.unpack(batch.observation, (3, 3, 2), np.float32), obs[rows])
    np.testing.assert_array_equal(batch.policy, policy[rows])
    np.testing.assert_array_equal(batch.q, batch.z)  # the oracle's value whatever q_ratio says
    assert np.all(batch.ending == ANCHOR_ENDING)


def test_the_buffer_mixes_the_configured_share_of_anchor_boards(tmp_path):
    buf = _buffer(tmp_path, 0.25)
    plain = buf.sample(16, seed=3)  # no anchor set yet: replay rows only
    assert np.all(plain.ending >= 0)
    buf.set_anchor(AnchorSet.of(*_anchor()))
    batch = buf.sample(16, seed=3)
    assert len(batch.z) == 16 and batch.legal_actions.shape == (16, W)
    assert np.all(batch.ending[:12] >= 0) and np.all(batch.ending[12:] == ANCHOR_ENDING)
    assert np.all((batch.policy[12:] == 1.0).sum(1) == 1) and np.all(batch.policy[12:, 5:] == 0)  # one-hot anchors
    np.testing.assert_array_equal(batch.legal_actions[12:, :5], np.tile(np.arange(5), (4, 1)))
    assert not np.all(batch.legal_actions[:12, :5] == np.arange(5))  # replay rows: random moves of 9, not 0..4
    # an unpacked sample unpacks the anchor rows too, to the replay's dtype
    unpacked = buf.sample(16, seed=3, unpack=True)
    np.testing.assert_array_equal(unpacked.observation[12:].astype(np.float32),
                                  packing.unpack(batch.observation, (3, 3, 2), np.float32)[12:])


def test_anchor_settings_are_checked():
    with pytest.raises(ValueError, match="anchor_fraction must be in"):
        ReplayConfig(anchor_records="a", anchor_fraction=1.0)
    with pytest.raises(ValueError, match="go together"):
        ReplayConfig(anchor_fraction=0.2)
    with pytest.raises(ValueError, match="go together"):
        ReplayConfig(anchor_records="a")


def test_the_buffer_refuses_an_anchor_of_another_width(tmp_path):
    buf = _buffer(tmp_path, 0.25)
    obs, legal, policy, z = _anchor()
    with pytest.raises(ValueError, match="move slots"):
        buf.set_anchor(AnchorSet.of(obs, legal[:, :5], policy[:, :5], z))
    with pytest.raises(ValueError, match="anchor_fraction > 0"):
        _buffer(tmp_path / "plain", 0.0).set_anchor(AnchorSet.of(obs, legal, policy, z))


def test_mixing_plain_observations_needs_their_shape():
    obs, legal, policy, z = _anchor()
    anchor = AnchorSet.of(obs, legal, policy, z).sample(2, np.random.default_rng(0))
    replay = anchor._replace(observation=obs[:2])
    with pytest.raises(ValueError, match="obs_shape"):
        mix(replay, anchor)
    assert mix(replay, anchor, (3, 3, 2)).observation.shape == (4, 3, 3, 2)


def test_sample_age_leaves_anchor_rows_out():
    batch = AnchorSet.of(*_anchor()).sample(4, np.random.default_rng(0))
    batch = batch._replace(ending=np.array([0, 2, ANCHOR_ENDING, ANCHOR_ENDING], np.int8),
                           version=np.array([90, 70, 0, 0], np.int32))
    figures = batch_figures(batch, jnp.int32(100))
    assert float(figures["sample_age"]) == pytest.approx(20.0)  # (10 + 30) / 2, not (10 + 30 + 200) / 4
    assert float(figures["trained_won_by_rules"]) == 0.25 and float(figures["trained_capped"]) == 0.25


def test_the_progress_line_names_the_anchor_share_and_the_drift_from_the_start():
    import types

    from selfplay.progress import health_text
    m = types.SimpleNamespace(value_std=0.2, value_active=0.5, value_explained=0.3, trained_won_by_rules=0.3,
                              trained_resigned=0.1, trained_capped=0.2, trained_drawn_by_rules=0.15, trained_adjudicated=0.0,
                              sample_age=12.0, start_kl=None, start_value_gap=None,
                              start_entropy_gap=None)
    assert health_text(m).endswith("trained won/resigned/capped/drawn 30/10/20/15% + anchor 25%, age 12 steps")
    m.trained_drawn_by_rules = 0.4  # no anchor boards: the shares sum to 1
    assert "anchor" not in health_text(m) and "30/10/20/40%, age 12" in health_text(m)
    m.trained_drawn_by_rules, m.trained_adjudicated = 0.3, 0.1  # games scored by material: their own share
    assert health_text(m).endswith("30/10/20/30% + adjudicated 10%, age 12 steps")
    m.start_kl = 0.0421  # learner.start_policy_weight: the drift it holds down
    assert health_text(m).endswith("age 12 steps; policy KL from start 0.042")
    m.start_value_gap = 0.0009  # learner.start_value_weight: the value's drift, as a root mean square
    assert health_text(m).endswith("policy KL from start 0.042; value RMS from start 0.030")
    m.start_entropy_gap = -0.0131  # learner.start_entropy_weight: the prior's sharpness against the start's
    assert health_text(m).endswith("value RMS from start 0.030; prior entropy -0.013 nats from start")
