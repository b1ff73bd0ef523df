"""games/pgx_internals.py against pgx's public API and python-chess, on positions of random games
played with the public env: after every legal move, `after_move` is the board the public step
reaches, `is_checked` of it is python-chess's gives_check, and `legal_action_mask` of it is the
public step's mask. A pgx that lacks one of the names is one ImportError line."""
import types

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pgx.chess
import pytest

import games
from games import chess_bridge, pgx_internals
from games.immediate_wins import legal_slots

CHESS = games.make("chess")
GAMES, PLIES, EVERY = 6, 36, 6  # positions at plies 6, 12, ..., 36 of 6 random games


def _random_positions():
    """(batched states, python-chess boards) of random games played with the public env, each game
    mirrored move by move in python-chess; positions where the game has ended are left out."""
    rng = np.random.default_rng(0)
    step = jax.jit(CHESS.step)
    states = CHESS.init(jax.random.split(jax.random.PRNGKey(0), GAMES))
    boards = [chess.Board() for _ in range(GAMES)]
    kept, kept_boards = [], []
    for ply in range(1, PLIES + 1):
        masks, over = np.asarray(CHESS.legal_mask(states)), np.asarray(CHESS.terminal(states))
        actions = np.array([0 if done else rng.choice(np.flatnonzero(m)) for m, done in zip(masks, over)])
        for board, action, done in zip(boards, actions, over):
            if not done:
                board.push(chess_bridge.pgx_action_to_move(int(action), board))
        states = step(states, jnp.asarray(actions, jnp.int32))
        if ply % EVERY == 0:
            for i in np.flatnonzero(~np.asarray(CHESS.terminal(states))):
                kept.append(chess_bridge.state_at(states, int(i)))
                kept_boards.append(boards[i].copy())
    return jax.tree.map(lambda *xs: jnp.stack(xs), *kept), kept_boards


def test_internals_agree_with_the_public_step_and_python_chess():
    states, boards = _random_positions()
    assert len(boards) >= 24
    x = pgx_internals.rule_state(states)
    np.testing.assert_array_equal(pgx_internals.step_count(states), [b.ply() for b in boards])
    np.testing.assert_array_equal(jax.jit(jax.vmap(pgx_internals.legal_action_mask))(x), CHESS.legal_mask(states))

    width = max(b.legal_moves.count() for b in boards)
    slots = legal_slots(CHESS, states, width)  # [P, W] legal actions, EMPTY after

    @jax.jit
    def internal(x, slots):
        after = jax.vmap(jax.vmap(pgx_internals.after_move, (None, 0)), (0, 0))(x, slots)
        flat = jax.tree.map(lambda a: a.reshape(-1, *a.shape[2:]), after)
        return (flat.board, jax.vmap(pgx_internals.is_checked)(flat),
                jax.vmap(pgx_internals.legal_action_mask)(flat))

    public = jax.jit(lambda s, a: CHESS.step(jax.tree.map(lambda v: jnp.repeat(v, width, axis=0), s), a))
    board, checked, mask = internal(x, slots)
    children = public(states, jnp.maximum(slots, 0).reshape(-1))
    valid = np.asarray(slots).reshape(-1) >= 0
    going_on = valid & ~np.asarray(CHESS.terminal(children))
    np.testing.assert_array_equal(np.asarray(board)[valid], np.asarray(pgx_internals.rule_state(children).board)[valid])
    np.testing.assert_array_equal(np.asarray(mask)[going_on], np.asarray(CHESS.legal_mask(children))[going_on])
    gives_check = [b.gives_check(chess_bridge.pgx_action_to_move(int(a), b))
                   for b, row in zip(boards, np.asarray(slots)) for a in row[row >= 0]]
    assert np.asarray(checked)[valid].tolist() == gives_check
    assert any(gives_check) and not all(gives_check)


def test_a_pgx_without_a_name_is_one_line():
    rules = pgx_internals._rules()
    assert pgx_internals.missing_names(rules, pgx.chess.State) == []
    lacking = types.SimpleNamespace(**{n: getattr(rules, n) for n in pgx_internals.RULE_CORE_NAMES
                                       if n != "_is_checked"})
    missing = pgx_internals.missing_names(lacking, pgx.chess.State)
    assert missing == ["pgx._src.games.chess._is_checked"]
    with pytest.raises(ImportError, match=r"lacks pgx\._src\.games\.chess\._is_checked, .*pgx 2\.6") as e:
        pgx_internals._refuse(missing)
    assert "\n" not in str(e.value)
