"""The training step: AlphaZero's loss (z - v)^2 - pi . log p + c ||theta||^2 (+ WDL cross entropy).

    state = init_train_state(net, cfg, sample_obs, key)
    step = make_train_step(net, cfg, num_actions)
    state, metrics = step(state, batch)      # jitted

`batch` is what `ReplayBuffer.sample` returns: observation [B, *obs_shape], legal_actions [B, W]
(pgx ids, -1 pads), policy [B, W] (pi over those moves), z [B]. The policy is scattered to the full
action axis inside the jitted step; log p is taken over the legal moves only.
"""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from learner.config import LearnerConfig


class TrainState(NamedTuple):
    """Everything a resumed run needs to continue exactly (saved by learner/checkpoint.py)."""

    params: Any
    batch_stats: Any
    opt_state: Any
    step: jax.Array  # [] int32 learner steps taken
    rng: jax.Array  # [2] uint32 raw PRNG key for sampling seeds


def learning_rate(cfg: LearnerConfig) -> optax.Schedule:
    """Piecewise-constant schedule: lr_values[i] from lr_boundaries[i - 1] on."""
    scales = {b: cfg.lr_values[i + 1] / cfg.lr_values[i] for i, b in enumerate(cfg.lr_boundaries)}
    return optax.piecewise_constant_schedule(cfg.lr_values[0], scales)


def make_optimizer(cfg: LearnerConfig) -> optax.GradientTransformation:
    """SGD with momentum on the loss gradient plus 2c theta (the gradient of c ||theta||^2)."""
    return optax.chain(optax.add_decayed_weights(2 * cfg.l2),
                       optax.sgd(learning_rate(cfg), momentum=cfg.momentum))


def init_train_state(net, cfg: LearnerConfig, sample_obs: jax.Array, key: jax.Array,
                     variables: Any = None) -> TrainState:
    """Fresh state (or around given `variables`); `sample_obs` [B, *obs_shape] fixes shapes.

    `key` is a raw uint32 [2] key (`jax.random.PRNGKey(seed)`), kept raw so checkpoints store it.
    """
    init_key, rng = jax.random.split(key)
    if variables is None:
        variables = net.init(init_key, sample_obs, train=False)
    params = variables["params"]
    return TrainState(params, variables.get("batch_stats", {}), make_optimizer(cfg).init(params),
                      jnp.zeros((), jnp.int32), rng)


def dense_targets(legal_actions: jax.Array, policy: jax.Array, num_actions: int):
    """[B, W] slots -> legal mask [B, A] bool and pi [B, A] (pads of -1 are dropped)."""
    B = legal_actions.shape[0]
    ids = jnp.where(legal_actions >= 0, legal_actions, num_actions)  # out of range: dropped
    rows = jnp.arange(B)[:, None]
    mask = jnp.zeros((B, num_actions), bool).at[rows, ids].set(True, mode="drop")
    pi = jnp.zeros((B, num_actions), jnp.float32).at[rows, ids].set(policy, mode="drop")
    return mask, pi


def loss_and_metrics(params, batch_stats, net, cfg: LearnerConfig, num_actions: int, batch: dict):
    """Scalar loss, (new batch_stats, metrics dict)."""
    out, updates = net.apply({"params": params, "batch_stats": batch_stats}, batch["observation"],
                             train=True, mutable=["batch_stats"])
    mask, pi = dense_targets(batch["legal_actions"], batch["policy"], num_actions)
    logits = jnp.where(mask, out.policy_logits.astype(jnp.float32), -1e9)
    log_p = jax.nn.log_softmax(logits, axis=-1)
    policy_loss = -jnp.sum(jnp.where(mask, pi * log_p, 0.0), axis=-1).mean()
    z = batch["z"].astype(jnp.float32)
    value_loss = jnp.mean((z - out.value.astype(jnp.float32)) ** 2)
    loss = policy_loss + cfg.value_weight * value_loss
    metrics = {"policy_loss": policy_loss, "value_loss": value_loss,
               "policy_entropy": -jnp.sum(jnp.where(mask, jnp.exp(log_p) * log_p, 0.0), axis=-1).mean()}
    if out.wdl_logits is not None:
        wdl_target = jnp.where(z > 0, 0, jnp.where(z < 0, 2, 1))  # win / draw / loss of the side to move
        wdl_loss = optax.softmax_cross_entropy_with_integer_labels(
            out.wdl_logits.astype(jnp.float32), wdl_target).mean()
        loss = loss + cfg.wdl_weight * wdl_loss
        metrics["wdl_loss"] = wdl_loss
    metrics["loss"] = loss
    return loss, (updates.get("batch_stats", batch_stats), metrics)


def make_train_step(net, cfg: LearnerConfig, num_actions: int):
    """jitted (TrainState, batch) -> (TrainState, metrics incl. learning_rate, l2 norm)."""
    optimizer = make_optimizer(cfg)
    schedule = learning_rate(cfg)

    @functools.partial(jax.jit, donate_argnums=0)  # the old state's buffers are reused in place
    def step(state: TrainState, batch: dict):
        grad_fn = jax.grad(loss_and_metrics, has_aux=True)
        grads, (batch_stats, metrics) = grad_fn(state.params, state.batch_stats, net, cfg, num_actions, batch)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics["learning_rate"] = schedule(state.step)
        metrics["param_norm"] = optax.tree.norm(params)
        return TrainState(params, batch_stats, opt_state, state.step + 1, state.rng), metrics

    return step
