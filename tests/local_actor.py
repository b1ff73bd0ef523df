"""A self-play actor in the test's own process: an untrained network, a stand-in replay buffer and
parameter store (the tests of the actor, openings, tree reuse, chess self-play and the GPU share it)."""
from __future__ import annotations

import jax
import jax.numpy as jnp

import games
import models
from actors.selfplay_actor import SelfPlayActor
from replay.record import decode
from selfplay.config import SelfPlayConfig


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
