"""The network as a search calls it, built in one place for every player (actors, the in-run
evaluator, arena agents, distillation, benches).

    evaluate = evaluation_fn(module)                     # a module you hold
    ev = load_evaluation("runs/a/network")              # a network directory
    ev = load_evaluation(cfg.network, game.spec, seed)  # a config's untrained network
    out = ev.evaluate(ev.variables, obs)                # obs [B, *observation_shape] -> NetworkOutput
    search.make_search(game, ev.evaluate, search_cfg)(ev.variables, states, key)

`evaluate(variables, observations)` is search/game_search.py's `Evaluate`: a NetworkOutput (policy logits
[B, num_actions] in pgx's order, value [B] in [-1, 1] for the side to move, WDL or None) in inference
mode (BatchNorm's running averages; mixed precision as the config's `compute_dtype` says). It is not
jitted: the search jits it with the tree, a caller that evaluates on its own wraps it in `jax.jit`.
"""
from __future__ import annotations

import os
from typing import Any, Callable, NamedTuple, Optional

import flax.linen as nn
import jax
import jax.numpy as jnp

from models import network_dir
from models.network import NetworkConfig, make_network
from models.output import NetworkOutput

# evaluate(variables, observations [B, *observation_shape]) -> NetworkOutput
Evaluate = Callable[[Any, jax.Array], NetworkOutput]


class Evaluation(NamedTuple):
    """A network ready for a search: `evaluate(variables, obs)` and the variables it plays with."""

    evaluate: Evaluate
    variables: Any  # {"params": ..., "batch_stats": ...} of jax arrays
    module: nn.Module  # the flax module the variables belong to
    config: NetworkConfig
    game: Optional[str]  # the pgx game it reads observations of (None: a student on its native input)
    metadata: dict  # the network directory's metadata (step, run, search, ...); {} for a config


def evaluation_fn(module: nn.Module) -> Evaluate:
    """`module` (models.make_network's, or a network directory's) as the search calls it:
    (variables, observations [B, *observation_shape]) -> NetworkOutput, inference mode."""
    return lambda variables, observations: module.apply(variables, observations, train=False)


def load_evaluation(source: str | os.PathLike | NetworkConfig, game_spec=None, seed: int = 0) -> Evaluation:
    """The evaluation of a network directory (`source` a path: its module and variables as jax arrays,
    errors as models/network_dir.py's `load`), or of `source` a NetworkConfig's untrained network for
    `game_spec` (its variables initialised with PRNGKey(seed); they do not depend on the example
    observation's values or batch size, so they are a game's `net.init(PRNGKey(seed), obs)`)."""
    if isinstance(source, NetworkConfig):
        if game_spec is None:
            raise ValueError("load_evaluation: an untrained network needs the game_spec it plays")
        module = make_network(source, game_spec)
        example = jnp.zeros((1, *game_spec.observation_shape), jnp.float32)
        variables = module.init(jax.random.PRNGKey(seed), example, train=False)
        return Evaluation(evaluation_fn(module), variables, module, source, game_spec.name, {})
    network = network_dir.load(source)
    module = network.module()
    variables = jax.tree.map(jnp.asarray, network.variables)
    return Evaluation(evaluation_fn(module), variables, module, network.config, network.game, network.metadata)
