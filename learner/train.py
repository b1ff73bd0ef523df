"""The training step: AlphaZero's loss (z - v)^2 - pi . log p + c ||theta||^2 (+ WDL cross entropy).

    state = init_train_state(net, cfg, sample_obs, key)
    step = make_train_step(net, cfg, symmetry.of(game_name))   # transforms used with cfg.augment
    state, metrics = step(state, batch)      # jitted

`batch` is what `ReplayBuffer.sample` returns, a `TrainingBatch` (replay/messages.py; any pytree
with these attributes does): observation [B, *obs_shape] or its games.packing.PackedObservation
(unpacked inside the step, on the device), legal_actions [B, W] (pgx ids, -1 pads),
policy [B, W] (pi over those moves), z [B]. The network's logits are gathered at the legal moves
inside the jitted step and log p is taken over those alone (no dense [B, A] targets).

Beside the losses the metrics say whether the value head is alive (docs/selfplay.md, "Value health"):
value_std (spread of v over the batch), value_active (share of the ResNet value head's ReLU units that
pass, in its less active layer: the 1x1 conv's or the dense one's; sown by models/resnet.py; absent for
other families), value_explained (1 - Var(z - v) / Var(z), NaN when every z of the batch is equal); and, for batches that carry them (TrainingBatch's
`ending` and `version`), what the learner trains on: trained_<ending> (the batch's share of positions
from games that ended so, ENDINGS) and sample_age (learner step minus the version of
the network that played the position, mean over the batch).
"""
from __future__ import annotations

import functools
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import optax

from games import packing, symmetry, winprob
from learner.config import LearnerConfig
from models import VALUE_ACTIVE
from search import slots

# What Batch.ending's codes 0..4 mean: how the position's game ended (replay.messages.ENDINGS is the
# same tuple on the producing side; learner/ does not import replay/, a test pins that they agree)
ENDINGS = ("won_by_rules", "resigned", "capped", "drawn_by_rules", "adjudicated")


class TrainState(NamedTuple):
    """Everything a resumed run needs to continue exactly (saved by learner/checkpoint.py)."""

    params: Any
    batch_stats: Any
    opt_state: Any
    step: jax.Array  # [] int32 learner steps taken
    rng: jax.Array  # [2] uint32 raw PRNG key for sampling seeds


class Batch(Protocol):
    """What the train step reads from a batch (replay.messages.TrainingBatch is one)."""

    observation: jax.Array  # [B, *obs_shape]
    legal_actions: jax.Array  # [B, W] int32 pgx ids, -1 pads
    policy: jax.Array  # [B, W] pi over those moves
    z: jax.Array  # [B] outcome for the side to move
    q: jax.Array | None  # [B] the search's root value for the side to move (needed when q_ratio > 0)
    # optional (read with getattr): ending [B] int8 index into ENDINGS of how the position's game
    # ended, version [B] int32 the parameter version that played it


def learning_rate(cfg: LearnerConfig) -> optax.Schedule:
    """Piecewise-constant schedule: lr_values[i] from lr_boundaries[i - 1] on (a stage may be 0: the
    weights then stay while BatchNorm's running statistics still follow the batches)."""
    stages = [optax.constant_schedule(value) for value in cfg.lr_values]
    stepped = optax.join_schedules(stages, list(cfg.lr_boundaries))
    if not cfg.lr_warmup_steps:
        return stepped
    # step 0 trains at 1/lr_warmup_steps of the rate, step lr_warmup_steps - 1 and later at all of it
    warmup = optax.linear_schedule(1.0 / cfg.lr_warmup_steps, 1.0, max(cfg.lr_warmup_steps - 1, 1))
    return lambda step: stepped(step) * warmup(step)


def kernels_only(params: Any) -> Any:
    """The weight-decay mask of `decay_norms: false`: True for parameters of 2+ dimensions (conv and
    dense kernels, embeddings), False for BatchNorm/LayerNorm scales and biases and every bias."""
    return jax.tree.map(lambda p: jnp.ndim(p) >= 2, params)


def read_by_value(net, variables: dict, obs: jax.Array) -> dict:
    """{"params", "batch_stats"} -> bool per array: whether the network's value reads it. Each array in
    turn is set to NaN and the value evaluated (as it plays) on `obs` [B, *obs_shape]: NaN passes every
    operation a network's value is made of (sums, products, max, tanh, normalisation), so the value turns
    NaN exactly when it reads the array, whatever the weights (a dead ReLU included)."""
    flat, treedef = jax.tree.flatten(variables)
    value_of = jax.jit(lambda leaves: net.apply(treedef.unflatten(leaves), obs, train=False).value)

    def reads(i: int) -> bool:
        poisoned = [jnp.full_like(x, jnp.nan) if j == i else x for j, x in enumerate(flat)]
        return bool(jnp.isnan(value_of(poisoned)).any())

    return treedef.unflatten([reads(i) for i in range(len(flat))])


def frozen_leaves(net, cfg: LearnerConfig, variables: dict, obs: jax.Array) -> Any:
    """The parameters `cfg.trains` keeps (a bool per array, True: kept), or None for "all". For "policy":
    every parameter the value reads (the trunk and the value head; read_by_value). Raises ValueError when
    nothing would be left to train."""
    if cfg.trains == "all":
        return None
    reads = read_by_value(net, variables, obs)
    if all(jax.tree.leaves(reads["params"])):
        raise ValueError("learner.trains=policy: this network's value reads every parameter (no policy head of "
                         "its own), so nothing would train; use learner.trains=all")
    return reads["params"]


def make_optimizer(cfg: LearnerConfig, frozen: Any = None) -> optax.GradientTransformation:
    """SGD with momentum on the loss gradient plus 2c theta (the gradient of c ||theta||^2), or AdamW
    with weight decay 2c (decoupled: scaled by the learning rate, not by Adam's second moment). With
    `decay_norms` false the decay skips what `kernels_only` masks out; `frozen` (learner.trains) zeroes
    the updates of the arrays it marks."""
    mask = None if cfg.decay_norms else kernels_only
    if cfg.optimizer == "adam":
        optimizer = optax.adamw(learning_rate(cfg), b1=cfg.momentum, weight_decay=2 * cfg.l2, mask=mask)
    else:
        optimizer = optax.chain(optax.add_decayed_weights(2 * cfg.l2, mask=mask),
                                optax.sgd(learning_rate(cfg), momentum=cfg.momentum))
    if frozen is None:
        return optimizer
    return optax.chain(optimizer, optax.masked(optax.set_to_zero(), frozen))


def init_train_state(net, cfg: LearnerConfig, sample_obs: jax.Array, key: jax.Array,
                     variables: Any = None) -> TrainState:
    """Fresh state (or around given `variables`); `sample_obs` [B, *obs_shape] fixes shapes.

    `key` is a raw uint32 [2] key (`jax.random.PRNGKey(seed)`), kept raw so checkpoints store it.
    """
    init_key, rng = jax.random.split(key)
    if variables is None:
        variables = net.init(init_key, sample_obs, train=False)
    params = variables["params"]
    optimizer = make_optimizer(cfg, frozen_leaves(net, cfg, variables, sample_obs))
    return TrainState(params, variables.get("batch_stats", {}), optimizer.init(params),
                      jnp.zeros((), jnp.int32), rng)


def legal_log_probs(policy_logits: jax.Array, legal_actions: jax.Array):
    """[B, A] logits, [B, W] legal ids (-1 pads) -> log p over the legal moves [B, W], valid [B, W] bool."""
    logits = slots.gather(policy_logits.astype(jnp.float32), legal_actions, -1e9)
    return jax.nn.log_softmax(logits, axis=-1), legal_actions != slots.EMPTY


def entropy(log_p: jax.Array, valid: jax.Array) -> jax.Array:
    """[B, W] log p over the legal moves, [B, W] valid -> [B] each position's entropy in nats."""
    return -jnp.sum(jnp.where(valid, jnp.exp(log_p) * log_p, 0.0), axis=-1)


def value_target(cfg: LearnerConfig, batch: Batch, v: jax.Array | None = None,
                 material: MaterialTarget | None = None) -> jax.Array:
    """[B] the value head's target: z, or z mixed with the search's root value q (less noisy than a
    single game's result, and not a draw's 0 for every position of a drawn game). With
    `q_ratio_after_explained` > 0, q is mixed in only when the value v [B] (the network's, before the
    step) explains at least that share of the batch's outcome variance; z alone otherwise. `material`
    (learner.material_value): that target mixed in at its share."""
    target = _outcome_target(cfg, batch, v)
    if material is None:
        return target
    return (1.0 - material.share) * target + material.share * material.value


def _outcome_target(cfg: LearnerConfig, batch: Batch, v: jax.Array | None) -> jax.Array:
    z = jnp.asarray(batch.z).astype(jnp.float32)
    if cfg.q_ratio == 0.0:
        return z
    if batch.q is None:
        raise ValueError("learner.q_ratio > 0 needs batches with the search's root value q")
    ratio = jnp.float32(cfg.q_ratio)
    if cfg.q_ratio_after_explained > 0:
        if v is None:
            raise ValueError("learner.q_ratio_after_explained needs the value v to gate q_ratio")
        explained = explained_variance(z, jax.lax.stop_gradient(jnp.asarray(v, jnp.float32)))
        ratio = jnp.where(explained >= cfg.q_ratio_after_explained, ratio, 0.0)  # NaN (z all equal): z alone
    return (1.0 - ratio) * z + ratio * jnp.asarray(batch.q).astype(jnp.float32)


# Lichess's win% curve (games.winprob): 2 P(win) - 1 = tanh(WIN_PROB_SLOPE cp / 2), a pawn 100 cp
MATERIAL_SLOPE = winprob.WIN_PROB_SLOPE * 100 / 2


class MaterialTarget(NamedTuple):
    """learner.material_value's part of a batch's value target."""

    value: jax.Array  # [B] tanh(MATERIAL_SLOPE x the side to move's material lead in pawns)
    share: jax.Array  # [] its weight at this step


def material_target(cfg: LearnerConfig, lead: jax.Array, step: jax.Array) -> MaterialTarget:
    """lead [B] in pawns, the learner's step -> the material target and its share at that step."""
    share = jnp.float32(cfg.material_value)
    if cfg.material_value_steps:
        share = share * jnp.clip(1.0 - step / cfg.material_value_steps, 0.0, 1.0)
    return MaterialTarget(jnp.tanh(MATERIAL_SLOPE * jnp.asarray(lead, jnp.float32)), share)


def explained_variance(z: jax.Array, v: jax.Array) -> jax.Array:
    """[] 1 - Var(z - v) / Var(z) over the batch: the share of the outcomes' variance the value
    explains (1: v = z; 0: no better than z's mean; < 0: worse). NaN when Var(z) is 0."""
    var_z = jnp.var(z)
    return jnp.where(var_z > 0, 1.0 - jnp.var(z - v) / jnp.where(var_z > 0, var_z, 1.0), jnp.nan)


def sown(intermediates: Any, name: str) -> jax.Array | None:
    """The value a module sowed under `name` anywhere in an "intermediates" collection (a network
    wrapped by models/network.py nests it), or None if none did."""
    for path, leaf in jax.tree_util.tree_flatten_with_path(intermediates)[0]:
        if any(getattr(k, "key", None) == name for k in path):
            return leaf
    return None


def batch_figures(batch: Batch, step: jax.Array) -> dict[str, jax.Array]:
    """What the batch trains on: trained_<ending> (share of its positions from games that ended so;
    anchor boards count in none) and sample_age (mean of `step` minus the version that played each
    self-play position); {} for batches without `ending` / `version`."""
    figures = {}
    ending = getattr(batch, "ending", None)
    if ending is not None:
        ending = jnp.asarray(ending)
        for i, name in enumerate(ENDINGS):
            figures[f"trained_{name}"] = jnp.mean((ending == i).astype(jnp.float32))
    version = getattr(batch, "version", None)
    if version is not None:
        age = (step - jnp.asarray(version)).astype(jnp.float32)
        # anchor boards (ending < 0, replay/anchor.py) were played by no network: not in the age
        played = jnp.ones_like(age) if ending is None else (ending >= 0).astype(jnp.float32)
        figures["sample_age"] = jnp.sum(age * played) / jnp.maximum(jnp.sum(played), 1.0)
    return figures


def loss_and_metrics(params, batch_stats, net, cfg: LearnerConfig, batch: Batch, start: Any = None,
                     material: MaterialTarget | None = None):
    """Scalar loss, (new batch_stats, metrics dict). `start`: the run's first network's variables,
    whose policy, value and prior's entropy `cfg.start_policy_weight` / `start_value_weight` /
    `start_entropy_weight` keep this one near (None: no
    such term); `material`: the value target's material part (learner.material_value; None: none)."""
    # trains=policy: the policy head learns on the trunk's features as it plays them (running statistics,
    # kept: the value reads them); trains=all: batch statistics, AlphaZero's training
    out, updates = net.apply({"params": params, "batch_stats": batch_stats}, batch.observation,
                             train=cfg.trains == "all", mutable=["batch_stats", "intermediates"])
    log_p, valid = legal_log_probs(out.policy_logits, batch.legal_actions)
    cross_entropy = -jnp.sum(jnp.where(valid, batch.policy * log_p, 0.0), axis=-1)  # [B]
    policy_loss = cross_entropy.mean()
    z = jnp.asarray(batch.z).astype(jnp.float32)
    value_loss = jnp.mean((value_target(cfg, batch, out.value, material) - out.value.astype(jnp.float32)) ** 2)
    loss = policy_loss + cfg.value_weight * value_loss
    v = jax.lax.stop_gradient(out.value.astype(jnp.float32))
    metrics = {"policy_loss": policy_loss, "value_loss": value_loss,
               "policy_entropy": entropy(log_p, valid).mean(),
               # spread of v over the batch: ~0 once the value head ignores its input (a dead ReLU)
               "value_std": jnp.std(v),
               "value_explained": explained_variance(z, v)}
    active = sown(updates.get("intermediates", {}), VALUE_ACTIVE)
    if active is not None:
        metrics["value_active"] = jnp.asarray(active, jnp.float32)
    if out.wdl_logits is not None:
        wdl_target = jnp.where(z > 0, 0, jnp.where(z < 0, 2, 1))  # win / draw / loss of the side to move
        wdl_loss = optax.softmax_cross_entropy_with_integer_labels(
            out.wdl_logits.astype(jnp.float32), wdl_target).mean()
        loss = loss + cfg.wdl_weight * wdl_loss
        metrics["wdl_loss"] = wdl_loss
    if start is not None:
        start_out = jax.lax.stop_gradient(net.apply(start, batch.observation, train=False))
        start_log_p, _ = legal_log_probs(start_out.policy_logits, batch.legal_actions)
        if cfg.start_policy_weight > 0:
            start_kl = jnp.sum(jnp.where(valid, jnp.exp(start_log_p) * (start_log_p - log_p), 0.0), axis=-1).mean()
            loss = loss + cfg.start_policy_weight * start_kl
            metrics["start_kl"] = start_kl
        if cfg.start_entropy_weight > 0:
            gap = entropy(log_p, valid) - entropy(start_log_p, valid)  # [B] nats, < 0: sharper than the start
            loss = loss + cfg.start_entropy_weight * jnp.mean(gap ** 2)
            metrics["start_entropy_gap"] = gap.mean()
        if cfg.start_value_weight > 0:
            gap = jnp.mean((out.value.astype(jnp.float32) - start_out.value.astype(jnp.float32)) ** 2)
            loss = loss + cfg.start_value_weight * gap
            metrics["start_value_gap"] = gap
    metrics["loss"] = loss
    return loss, (updates.get("batch_stats", batch_stats), metrics)


def make_train_step(net, cfg: LearnerConfig, transforms: tuple[symmetry.Transform, ...] = (),
                    obs_spec: jax.ShapeDtypeStruct | None = None, material_of: Any = None,
                    frozen: Any = None):
    """jitted (TrainState, batch, start=None) -> (TrainState, metrics incl. learning_rate, l2 norm);
    `start`: the variables of the run's first network, for `cfg.start_policy_weight` / `start_value_weight`. With
    `cfg.augment`, each position of the batch (a NamedTuple) first goes under one of `transforms`,
    drawn from the state's RNG and step (a resumed run draws the same). `obs_spec`: one
    position's shape and dtype, needed for batches of packed observations. `material_of`: observations
    [B, *obs_shape] -> the side to move's material lead [B] in pawns (games.material), needed with
    `cfg.material_value`. `frozen`: the parameters the steps keep (frozen_leaves; needed with `cfg.trains`
    other than "all", which also trains the network as it plays: BatchNorm on its running statistics,
    which then stay)."""
    if (frozen is None) != (cfg.trains == "all"):
        raise ValueError(f"learner.trains={cfg.trains} needs make_train_step(..., frozen=frozen_leaves(...)) "
                         "and trains=all none")
    optimizer = make_optimizer(cfg, frozen)
    if cfg.material_value and material_of is None:
        raise ValueError("learner.material_value needs the game's material (chess)")
    schedule = learning_rate(cfg)
    if cfg.augment and len(transforms) < 2:
        raise ValueError("learner.augment needs the game's board symmetries (games/symmetry.py); this game has none")

    def loss_of_trained(params, *args):
        """loss_and_metrics with the kept parameters behind stop_gradient: their gradient is a symbolic
        zero, so the backward pass skips the trunk (trains=policy: about the head's cost alone)."""
        params = jax.tree.map(lambda keep, p: jax.lax.stop_gradient(p) if keep else p, frozen, params)
        return loss_and_metrics(params, *args)

    @functools.partial(jax.jit, donate_argnums=0)  # the old state's buffers are reused in place
    def step(state: TrainState, batch: Batch, start: Any = None):
        if isinstance(batch.observation, packing.PackedObservation):
            if obs_spec is None:
                raise ValueError("packed observations need make_train_step(..., obs_spec=their shape and dtype)")
            batch = batch._replace(observation=packing.unpack(batch.observation, obs_spec.shape, obs_spec.dtype))
        if cfg.augment:
            key = jax.random.fold_in(jax.random.fold_in(state.rng, 0xA5), state.step)
            observation, legal = symmetry.augment(transforms, key, batch.observation, batch.legal_actions)
            batch = batch._replace(observation=observation, legal_actions=legal)
        material = (material_target(cfg, material_of(batch.observation), state.step)
                    if cfg.material_value else None)
        grad_fn = jax.grad(loss_of_trained if frozen is not None else loss_and_metrics, has_aux=True)
        grads, (batch_stats, metrics) = grad_fn(state.params, state.batch_stats, net, cfg, batch, start, material)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics.update(batch_figures(batch, state.step))
        metrics["learning_rate"] = schedule(state.step)
        metrics["param_norm"] = optax.tree.norm(params)
        return TrainState(params, batch_stats, opt_state, state.step + 1, state.rng), metrics

    return step
