"""A small batched game interface over pgx environments, shared by search, self-play and play.

Every method takes and returns batched pgx states (leading axis B) and is jit/vmap-able.
Rewards are pgx's: `rewards(states)[b, p]` is player p's reward in game b (+1 win, -1 loss, 0 draw),
non-zero only on the step that ends the game. Player ids are pgx's (0 or 1), not colours.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import pgx

from games import pgx_internals, symmetry
from games.ladders import Ladder, ladder

State = Any  # a batched pgx.State


@dataclasses.dataclass(frozen=True)
class GameSpec:
    """Static facts about a game that search, networks and self-play size themselves by."""

    name: str  # our name, e.g. "chess"
    pgx_id: str  # pgx environment id
    num_actions: int  # size of pgx's action space (chess: 4672 = 64 squares x 73 planes)
    observation_shape: tuple[int, ...]  # pgx observation per state (chess: (8, 8, 119))
    max_legal_actions: int  # upper bound on legal actions in any position (search slot width)
    max_plies: int  # game length cap; reaching it ends the game as a draw
    dirichlet_alpha: float  # root-noise alpha, ~10 / typical number of legal moves (AlphaZero)
    ladder: Ladder = Ladder()  # the fixed opponents of its in-run evaluation (games/ladders.py)


SPECS = {
    "chess": GameSpec("chess", "chess", 4672, (8, 8, 119), 218, 512, 0.3, ladder("chess")),
    "tic_tac_toe": GameSpec("tic_tac_toe", "tic_tac_toe", 9, (3, 3, 2), 9, 9, 1.0, ladder("tic_tac_toe")),
    "connect_four": GameSpec("connect_four", "connect_four", 7, (6, 7, 2), 7, 42, 1.0, ladder("connect_four")),
    "go_9x9": GameSpec("go_9x9", "go_9x9", 82, (9, 9, 17), 82, 162, 0.11),
    "shogi": GameSpec("shogi", "shogi", 2187, (9, 9, 119), 593, 512, 0.15),
}


class Game:
    """Batched rules of one pgx game. Build with `games.make(name)`."""

    def __init__(self, spec: GameSpec):
        self.spec = spec
        self.env, self._init, self._step = _batched_rules(spec.pgx_id)

    # Static facts, forwarded for convenience.
    name = property(lambda self: self.spec.name)
    num_actions = property(lambda self: self.spec.num_actions)
    observation_shape = property(lambda self: self.spec.observation_shape)
    max_legal_actions = property(lambda self: self.spec.max_legal_actions)
    max_plies = property(lambda self: self.spec.max_plies)

    @functools.cached_property
    def symmetries(self) -> tuple:
        """Its board symmetries for augmentation and symmetric evaluation, identity first
        (games/symmetry.py: `Transform`s; chess and shogi: the identity alone)."""
        return symmetry.of(self.name)

    @functools.cached_property
    def observation_dtype(self) -> jnp.dtype:
        """dtype of `observe`'s arrays (chess float32; the stone games bool)."""
        return jax.eval_shape(self.env.init, jax.random.PRNGKey(0)).observation.dtype

    def init(self, keys: jax.Array) -> State:
        """keys [B, 2] -> B initial states (pgx picks at random which player id moves first)."""
        states = self._init(keys)
        if self.spec.pgx_id == "chess":
            states = pgx_internals.fix_chess_start_hash(states)
        return states

    def step(self, states: State, actions: jax.Array) -> State:
        """Plays actions [B] (pgx ids); a game reaching `max_plies` is truncated as a draw.

        Stepping a finished game leaves it unchanged (pgx semantics) with zero rewards.
        """
        states = self._step(states, actions.astype(jnp.int32))
        capped = ~states.terminated & (pgx_internals.step_count(states) >= self.spec.max_plies)
        return states.replace(truncated=states.truncated | capped)

    def observe(self, states: State) -> jax.Array:
        """Observations [B, *observation_shape] from the side to move."""
        return states.observation

    def legal_mask(self, states: State) -> jax.Array:
        """[B, num_actions] bool."""
        return states.legal_action_mask

    def current_player(self, states: State) -> jax.Array:
        """[B] int32 pgx player id to move."""
        return states.current_player

    def terminal(self, states: State) -> jax.Array:
        """[B] bool: the game is over (ended by the rules or by the ply cap)."""
        return states.terminated | states.truncated

    def rewards(self, states: State) -> jax.Array:
        """[B, 2] float32 reward per pgx player id."""
        return states.rewards

    def reward_to_move(self, states: State) -> jax.Array:
        """[B] reward of the player whose turn it is in `states` (after the last step)."""
        return jnp.take_along_axis(states.rewards, states.current_player[:, None], axis=1)[:, 0]

    def plies(self, states: State) -> jax.Array:
        """[B] int32 plies played."""
        return pgx_internals.step_count(states)


@functools.cache
def _batched_rules(pgx_id: str):
    """pgx's env with its batched init and step, each one jitted function per process: a search (and
    every other function) that calls them traces their rules once per batch shape, not at every call
    site of every search it builds (a chess step traces for about a second)."""
    env = pgx.make(pgx_id)
    return env, jax.jit(jax.vmap(env.init)), jax.jit(jax.vmap(env.step))


def make(name: str) -> Game:
    """`make("chess")`, also "tic_tac_toe", "connect_four", "go_9x9", "shogi"."""
    if name not in SPECS:
        raise ValueError(f"unknown game '{name}' (known: {', '.join(sorted(SPECS))})")
    return Game(SPECS[name])
