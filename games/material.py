"""Chess material, and the adjudication of a long self-play game by it.

`balance(states)` [B]: the side to move's material minus its opponent's, in pawns (1 / 3 / 3 / 5 / 9;
kings count 0), read from pgx's board (the side to move's pieces are positive there).
`observation_balance(observation)` [B]: the same, read from pgx's chess observation (what the learner sees).
`adjudicate(states, margin)` [B, 2]: rewards per pgx player id for a game stopped before the rules end
it: +1 for the side at least `margin` pawns ahead, -1 for the other, 0 for both inside the margin.

Why: weak self-play rarely ends by the rules before the ply cap, so a value head trained on outcomes
alone sees mostly draws and little of what a piece is worth; a game scored by material once it has
gone on long enough ties the outcome to the board (as a human arbiter, or TCEC's adjudication by
evaluation, would end it). The network still learns only from its own games.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from games import pgx_internals

# pgx's piece codes: 0 empty, 1 pawn, 2 knight, 3 bishop, 4 rook, 5 queen, 6 king
PIECE_VALUES = (0.0, 1.0, 3.0, 3.0, 5.0, 9.0, 0.0)


def balance(states) -> jax.Array:
    """[B] float32: material of the player to move minus the opponent's, in pawns."""
    board = pgx_internals.rule_state(states).board  # [B, 64], the side to move's pieces positive
    values = jnp.asarray(PIECE_VALUES, jnp.float32)[jnp.abs(board)]
    return jnp.sum(jnp.sign(board) * values, axis=-1)


def observation_balance(observation) -> jax.Array:
    """observation [B, 8, 8, 119] (pgx chess) -> [B] float32 the same balance as `balance`: its planes 0-5
    are the side to move's pawns, knights, bishops, rooks, queens and king, 6-11 the opponent's."""
    counts = jnp.sum(jnp.asarray(observation[..., :12], jnp.float32), axis=(1, 2))  # [B, 12]
    values = jnp.asarray(PIECE_VALUES[1:], jnp.float32)  # pawn .. king
    return counts[:, :6] @ values - counts[:, 6:] @ values


def adjudicate(states, margin: float) -> jax.Array:
    """[B, 2] float32 rewards per pgx player id: the side `margin` or more pawns ahead wins."""
    lead = balance(states)
    to_move = jnp.where(lead >= margin, 1.0, jnp.where(lead <= -margin, -1.0, 0.0))
    mover_is_0 = states.current_player == 0
    return jnp.stack([jnp.where(mover_is_0, to_move, -to_move), jnp.where(mover_is_0, -to_move, to_move)], axis=-1)


def balance_of(game_name: str):
    """The learner's `material_of` for a game: `observation_balance` for chess, None for games without material."""
    return observation_balance if game_name == "chess" else None
