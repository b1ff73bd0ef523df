"""Symmetric evaluation: the network averaged over the game's board symmetries at every search node.

    evaluate = symmetric.averaged(evaluate, symmetry.of("connect_four"))   # identity + mirror

Test-time augmentation of the network (AlphaGo's eight-fold averaging; `SearchConfig.symmetric_eval`):
each position is evaluated under every transform of games/symmetry.py in one batched call of K x B
positions, each policy is renamed back to the position's own moves, and the K opinions are averaged
(probabilities for the policy, plain mean for the value). The result is exactly invariant under the
symmetries, and costs K network evaluations per node (connect four: 2).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from games import symmetry


def averaged(evaluate, transforms: tuple[symmetry.Transform, ...]):
    """`evaluate(params, obs [B, *obs])` -> (policy_logits [B, A], value [B]) or a NetworkOutput ->
    the same signature returning (log of the mean policy [B, A] float32, mean value [B] float32)."""
    if len(transforms) < 2:
        raise ValueError("symmetric evaluation needs a game with board symmetries (games/symmetry.py)")
    maps = jnp.asarray(np.stack([t.action_map for t in transforms]))  # [K, A]: action a's id under t
    K = len(transforms)

    def run(params, observations):
        B = observations.shape[0]
        views = jnp.concatenate([jax.vmap(lambda o, t=t: t.grid(o, jnp))(observations) for t in transforms])
        out = evaluate(params, views)
        logits, value = (out.policy_logits, out.value) if hasattr(out, "policy_logits") else out
        logits = logits.astype(jnp.float32).reshape(K, B, -1)
        # Each view's policy over the original position's moves: action a is maps[k, a] in view k.
        logits = jnp.take_along_axis(logits, maps[:, None, :], axis=-1)
        log_mean = jax.nn.logsumexp(jax.nn.log_softmax(logits, axis=-1), axis=0) - jnp.log(K)
        return log_mean, value.astype(jnp.float32).reshape(K, B).mean(axis=0)

    return run
