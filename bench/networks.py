"""The network a bench searches with: a preset's untrained network or a saved network directory."""
from __future__ import annotations

import jax
import jax.numpy as jnp

import models


def make_evaluate(network_config: models.NetworkConfig, game, network: str, seed: int = 0):
    """(evaluate, variables), evaluate(variables, obs [B, *obs_shape]) -> NetworkOutput: "untrained"
    (`network_config` initialised with `seed`) or the network directory `network`."""
    if network == "untrained":
        net = models.make_network(network_config, game.spec)
        obs = game.observe(game.init(jax.random.split(jax.random.PRNGKey(seed), 1)))
        variables = net.init(jax.random.PRNGKey(seed), obs, train=False)
    else:
        from models import checkpoint

        ckpt = checkpoint.load(network)
        net, variables = ckpt.module(), jax.tree.map(jnp.asarray, ckpt.variables)
    return (lambda v, o: net.apply(v, o, train=False)), variables
