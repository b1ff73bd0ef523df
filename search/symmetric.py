"""Symmetric evaluation: the network averaged over the game's board symmetries at every search node.

    net = symmetric.averaged(search.network_fn(evaluate), symmetry.of("connect_four"))   # identity + mirror

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


def averaged(net, transforms: tuple[symmetry.Transform, ...]):
    """`net(params, obs [B, *obs])` -> (policy_logits [B, A], value [B]) float32 (search.network_fn's
    form) -> the same signature returning (log of the mean policy [B, A], mean value [B])."""
    if len(transforms) < 2:
        raise ValueError("symmetric evaluation needs a game with board symmetries (games/symmetry.py)")
    maps = jnp.asarray(np.stack([t.action_map for t in transforms]))  # [K, A]: action a's id under t
    K = len(transforms)

    def run(params, observations):
        B = observations.shape[0]
        views = jnp.concatenate([jax.vmap(lambda o, t=t: t.grid(o, jnp))(observations) for t in transforms])
        logits, value = net(params, views)
        logits = logits.reshape(K, B, -1)
        # Each view's policy over the original position's moves: action a is maps[k, a] in view k.
        logits = jnp.take_along_axis(logits, maps[:, None, :], axis=-1)
        log_mean = jax.nn.logsumexp(jax.nn.log_softmax(logits, axis=-1), axis=0) - jnp.log(K)
        return log_mean, value.reshape(K, B).mean(axis=0)

    return run
