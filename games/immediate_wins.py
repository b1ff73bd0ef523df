"""Forced wins a search can know without the network: a move that wins at once (checkmate, four in
a row), and a short forcing line (a check with few replies, each answered by a mate).

    wins = immediate_wins(game, states, slot_actions)      # [B, W] bool: the move wins at once
    lost = forced_losses(game, states, slot_actions)       # [B] bool: every (of few) replies loses
    wins2 = wins_in_two(game, states, slot_actions)        # [B, W] bool: the move forces a win

search/game_search.py uses them (`SearchConfig.win_check`). Any game: step every slot and read the
rewards (cheap when W is small: tic-tac-toe 9, connect four 7). Chess (W = 218, a pgx step costs
~0.2 ms on a CPU core): only a checking move can mate, and "gives check" is one attack test on the
board after the move, so full legal-move generation runs for at most `max_checks` checking moves
per position, in a loop as long as the batch needs (pgx's rule core through games/pgx_internals.py).
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from games import pgx_internals

EMPTY = -1  # an unused slot (search/slots.py)


def immediate_wins(game, states, slot_actions: jax.Array, max_checks: int = 8) -> jax.Array:
    """[B, W] bool: the slot's move ends the game with a win for the side to move.

    states: batched pgx states [B]; slot_actions [B, W] int32 pgx actions (EMPTY = -1 unused).
    Chess: exact for the first `max_checks` checking moves of each position (by slot order);
    a position with more checking moves than that may miss a mate among the rest.
    """
    if game.spec.pgx_id == "chess":
        return _chess_mates(states, slot_actions, max_checks)
    return _by_stepping(game, states, slot_actions)


def forced_losses(game, states, slot_actions: jax.Array, max_replies: int = 4,
                  max_checks: int = 8) -> jax.Array:
    """[B] bool: the side to move has at most `max_replies` legal moves and every one of them
    leaves the opponent a move that wins at once (chess: after a check with few replies, mate in
    2 for the side that checked). Rows with more replies are False. Loops over the replies only as
    often as the batch needs (a single position: as many as it has)."""
    count = jnp.sum(slot_actions != EMPTY, axis=1)
    probe = (count > 0) & (count <= max_replies) & ~game.terminal(states)
    rounds = jnp.max(jnp.where(probe, count, 0))

    def reply(carry):
        k, lost = carry
        action = slot_actions[:, k]
        child = game.step(states, jnp.maximum(action, 0))
        punished = jnp.any(immediate_wins(game, child, legal_slots(game, child, slot_actions.shape[1]),
                                          max_checks), axis=1)
        return k + 1, lost & ((action == EMPTY) | punished)

    _, lost = jax.lax.while_loop(lambda c: c[0] < rounds, reply, (jnp.int32(0), probe))
    return lost


def wins_in_two(game, states, slot_actions: jax.Array, max_replies: int = 4,
                max_checks: int = 8) -> jax.Array:
    """[B, W] bool: the move leaves the opponent at most `max_replies` replies, each answered by an
    immediate win (`forced_losses` of the position after it). Chess: checking moves only (the first
    `max_checks`); other games: every move (W small)."""
    batch, width = slot_actions.shape
    if game.spec.pgx_id == "chess":
        picked, valid = _chess_checks(states, slot_actions, max_checks)
    else:
        picked = jnp.broadcast_to(jnp.arange(width), (batch, width))
        valid = slot_actions != EMPTY
    rows = jnp.arange(batch)
    rounds = jnp.max(jnp.sum(valid, axis=1))

    def candidate(carry):
        k, won = carry
        slot = picked[:, k]
        action = slot_actions[rows, slot]
        child = game.step(states, jnp.maximum(action, 0))
        lost = forced_losses(game, child, legal_slots(game, child, width), max_replies, max_checks)
        return k + 1, won.at[rows, slot].max(valid[:, k] & lost)

    _, won = jax.lax.while_loop(lambda c: c[0] < rounds, candidate,
                                (jnp.int32(0), jnp.zeros((batch, width), bool)))
    return won & ~game.terminal(states)[:, None]


def legal_slots(game, states, width: int) -> jax.Array:
    """[B, W] legal pgx actions in increasing id, EMPTY after (none in a finished position)."""
    mask = game.legal_mask(states) & ~game.terminal(states)[:, None]
    return jax.vmap(lambda row: jnp.nonzero(row, size=width, fill_value=EMPTY)[0])(mask).astype(jnp.int32)


def _by_stepping(game, states, slot_actions):
    batch, width = slot_actions.shape
    repeat = lambda x: jnp.repeat(x, width, axis=0)
    children = game.step(jax.tree.map(repeat, states), jnp.maximum(slot_actions, 0).reshape(-1))
    mover = jnp.repeat(game.current_player(states), width)
    reward = jnp.take_along_axis(game.rewards(children), mover[:, None], axis=1)[:, 0]
    over = game.terminal(states)[:, None]
    return (reward.reshape(batch, width) > 0) & (slot_actions != EMPTY) & ~over


def _checks_of(x, actions, max_checks):
    """One position: ([K] slots of its first K checking moves, [K] valid, [W] gives check)."""
    width = actions.shape[0]
    gives_check = jax.vmap(lambda a: pgx_internals.is_checked(pgx_internals.after_move(x, a)))(actions) & (
        actions != EMPTY)
    # Stable: the checking slots in slot order first, then the others.
    _, picked = jax.lax.top_k(gives_check * (width - jnp.arange(width)), max_checks)
    return picked, jnp.arange(max_checks) < jnp.minimum(gives_check.sum(), max_checks), gives_check


@functools.partial(jax.jit, static_argnums=2)  # traced once per shape, not at every search that calls it
def _chess_checks(states, slot_actions, max_checks):
    picked, valid, _ = jax.vmap(lambda x, a: _checks_of(x, a, max_checks))(pgx_internals.rule_state(states),
                                                                           slot_actions)
    return picked, valid


@functools.partial(jax.jit, static_argnums=2)
def _chess_mates(states, slot_actions, max_checks):
    def one(x, actions):
        picked, valid, gives_check = _checks_of(x, actions, max_checks)

        def confirm(carry):  # full reply generation for one checking move (usually 0-3 per position)
            i, mate = carry
            no_reply = ~pgx_internals.legal_action_mask(pgx_internals.after_move(x, actions[picked[i]])).any()
            return i + 1, mate.at[picked[i]].set(no_reply)

        _, mate = jax.lax.while_loop(lambda c: c[0] < valid.sum(), confirm,
                                     (jnp.int32(0), jnp.zeros(actions.shape, bool)))
        return mate & gives_check

    over = states.terminated | states.truncated
    return jax.vmap(one)(pgx_internals.rule_state(states), slot_actions) & ~over[:, None]
