"""learner.start_policy_weight, start_value_weight, start_entropy_weight: a warm run's penalties on
drifting from its first network's policy, value and prior's entropy, against figures computed in numpy and
by what each does to 60 steps of training."""
from __future__ import annotations

import jax
import numpy as np
import pytest
from test_learner import ttt_setup

from learner.config import LearnerConfig
from learner.train import init_train_state, loss_and_metrics, make_train_step


def train_from_start(net, batch, **settings):
    """60 steps at lr 0.05 (batch 32) from a fresh network, with `settings` (LearnerConfig fields) ->
    the state, the start's variables and the last step's metrics."""
    cfg = LearnerConfig(lr_values=(0.05,), lr_boundaries=(), batch_size=32, **settings)
    state = init_train_state(net, cfg, batch.observation[:1], jax.random.PRNGKey(0))
    start = jax.device_get({"params": state.params, "batch_stats": state.batch_stats})
    step = make_train_step(net, cfg)
    for _ in range(60):
        state, metrics = step(state, batch, start)
    return state, start, metrics


def test_the_start_policy_penalty_is_the_kl_to_the_first_network_and_holds_the_policy_near_it():
    """learner.start_policy_weight: the term is KL(start || p) over each position's legal moves (numpy
    here, from the two networks' logits: the start's as played, train=False; this one's as trained),
    and 60 steps toward the batch's targets drift less from the start with it than without."""
    game, net, batch = ttt_setup()

    def kl_by_hand(state, start) -> float:
        ours = net.apply({"params": state.params, "batch_stats": state.batch_stats}, batch.observation, train=True,
                         mutable=["batch_stats", "intermediates"])[0].policy_logits
        theirs = net.apply(start, batch.observation, train=False).policy_logits
        total = 0.0
        for b in range(len(batch.z)):
            legal = batch.legal_actions[b][batch.legal_actions[b] >= 0]
            p = np.exp(np.asarray(theirs[b, legal], np.float64) - np.logaddexp.reduce(np.asarray(theirs[b, legal], np.float64)))
            log_q = np.asarray(ours[b, legal], np.float64) - np.logaddexp.reduce(np.asarray(ours[b, legal], np.float64))
            total += float(np.sum(p * (np.log(p) - log_q)))
        return total / len(batch.z)

    held, start, _ = train_from_start(net, batch, start_policy_weight=1.0)
    cfg = LearnerConfig(start_policy_weight=1.0)
    metrics = loss_and_metrics(held.params, held.batch_stats, net, cfg, batch, start)[1][1]
    assert float(metrics["start_kl"]) == pytest.approx(kl_by_hand(held, start), rel=1e-4)
    free, _, _ = train_from_start(net, batch, start_policy_weight=0.0)
    assert kl_by_hand(held, start) < 0.5 * kl_by_hand(free, start)
    with pytest.raises(ValueError, match="start_policy_weight must be >= 0"):
        LearnerConfig(start_policy_weight=-1.0)


def test_the_start_value_penalty_is_the_mean_square_gap_to_the_first_network_and_holds_the_value_near_it():
    """learner.start_value_weight: the term is mean (v - v_start)^2 over the batch (numpy here, v_start
    as the start plays, train=False), and 60 steps of the policy loss alone (value_weight 0: the value
    still moves through the shared trunk) drift the value less from the start with it than without."""
    game, net, batch = ttt_setup()

    def gap_by_hand(state, start) -> float:
        ours = net.apply({"params": state.params, "batch_stats": state.batch_stats}, batch.observation, train=True,
                         mutable=["batch_stats", "intermediates"])[0].value
        theirs = net.apply(start, batch.observation, train=False).value
        return float(np.mean((np.asarray(ours, np.float64) - np.asarray(theirs, np.float64)) ** 2))

    held, start, metrics = train_from_start(net, batch, value_weight=0.0, start_value_weight=10.0)
    assert "start_kl" not in metrics  # each term only where its weight is set
    cfg = LearnerConfig(value_weight=0.0, start_value_weight=10.0)
    ours = loss_and_metrics(held.params, held.batch_stats, net, cfg, batch, start)[1][1]
    assert float(ours["start_value_gap"]) == pytest.approx(gap_by_hand(held, start), rel=1e-4)
    free, _, free_metrics = train_from_start(net, batch, value_weight=0.0, start_value_weight=0.0)
    assert "start_value_gap" not in free_metrics
    assert gap_by_hand(held, start) < 0.5 * gap_by_hand(free, start)
    with pytest.raises(ValueError, match="start_value_weight must be >= 0"):
        LearnerConfig(start_value_weight=-1.0)


def test_the_start_entropy_penalty_is_the_square_entropy_gap_and_keeps_the_prior_as_sharp_as_the_start():
    """learner.start_entropy_weight: the term is mean (H(p) - H(p_start))^2 over each position's legal
    moves (numpy here; its metric the mean signed gap), and 60 steps towards one-hot targets (which sharpen
    the prior) leave the prior's entropy nearer the start's with it than without, while the policy still
    moves towards the targets."""
    game, net, batch = ttt_setup()
    legal = np.asarray(batch.legal_actions)
    one_hot = np.zeros(legal.shape, np.float32)
    one_hot[:, 0] = 1.0  # every position's first legal move: a target far sharper than any prior
    batch = batch._replace(policy=one_hot)

    def entropies(variables, train: bool) -> np.ndarray:
        if train:
            logits = net.apply(variables, batch.observation, train=True, mutable=["batch_stats", "intermediates"])[0]
        else:
            logits = net.apply(variables, batch.observation, train=False)
        logits = np.asarray(logits.policy_logits, np.float64)
        out = []
        for b in range(len(batch.z)):
            row = logits[b, legal[b][legal[b] >= 0]]
            log_p = row - np.logaddexp.reduce(row)
            out.append(-np.sum(np.exp(log_p) * log_p))
        return np.array(out)

    held, start, metrics = train_from_start(net, batch, start_entropy_weight=4.0)
    ours = {"params": held.params, "batch_stats": held.batch_stats}
    gap = entropies(ours, train=True) - entropies(start, train=False)
    cfg = LearnerConfig(start_entropy_weight=4.0)
    loss_metrics = loss_and_metrics(held.params, held.batch_stats, net, cfg, batch, start)[1][1]
    assert float(loss_metrics["start_entropy_gap"]) == pytest.approx(gap.mean(), rel=1e-4, abs=1e-5)
    free, _, free_metrics = train_from_start(net, batch, start_entropy_weight=0.0)
    assert "start_entropy_gap" not in free_metrics and "start_kl" not in metrics
    free_gap = entropies({"params": free.params, "batch_stats": free.batch_stats}, train=True) - entropies(start, False)
    assert free_gap.mean() < -0.5  # one-hot targets sharpen the free prior by more than half a nat
    assert np.mean(gap ** 2) < 0.25 * np.mean(free_gap ** 2)
    assert float(metrics["policy_loss"]) < float(loss_and_metrics(
        start["params"], start["batch_stats"], net, cfg, batch, start)[1][1]["policy_loss"])  # it still learnt
    with pytest.raises(ValueError, match="start_entropy_weight must be >= 0"):
        LearnerConfig(start_entropy_weight=-1.0)
