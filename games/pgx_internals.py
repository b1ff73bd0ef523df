"""Every use of pgx's private names in the project, in one place: the private fields of a pgx State
(`_step_count`, chess's `_x` and `_player_order`) and pgx's chess rule core (`pgx._src.games.chess`).

Why not pgx's public API alone:
  * speed: immediate_wins.py asks of every legal move whether it gives check (one attack test on the
    board after the move, `after_move` + `is_checked`) and of a few checks whether any reply is
    legal (`legal_action_mask`). A public `env.step` per candidate also writes the position history,
    its hashes, the 119-plane observation and the rewards: ~210 us per candidate against ~0.6 us
    (jitted, 32 positions x 64 slots, one core of a 2-core CPU: ~350x), over ~35 moves per position
    and every position of a search batch. tests/test_pgx_internals.py pins that the two agree.
  * exactness: chess_bridge.py builds a State from a FEN with no phantom history and one compile
    (pgx.experimental.chess.from_fen keeps an initial position in its history and re-jits per call),
    and reads a State's board back; pgx 2.6 seeds the repetition history with a stale start hash
    (`fix_chess_start_hash`).
  * the ply cap: games/game.py truncates at `max_plies` from the State's `_step_count`.

Written against pgx 2.6.x (pyproject pins pgx>=2.6.0,<2.7). The rule core is imported on first use
(its import builds JAX tables, ~2 s) and checked then: a pgx without one of these names is one
ImportError line naming it. State fields are checked when this module is imported.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import pgx

WRITTEN_FOR = "pgx 2.6.x"
# what the rule core must hold (Action._from_label included)
RULE_CORE_NAMES = ("Game", "GameState", "Action", "FROM_PLANE", "_apply_move", "_flip_pos", "_is_checked",
                   "_legal_action_mask", "_update_history", "_zobrist_hash")
CHESS_STATE_FIELDS = ("_x", "_player_order")
GameState = Any  # pgx._src.games.chess.GameState: the rule core's NamedTuple of one position


def _refuse(missing: list[str]) -> None:
    if missing:
        raise ImportError(f"pgx {getattr(pgx, '__version__', '?')} lacks {', '.join(missing)}, which "
                          f"games/pgx_internals.py uses (written for {WRITTEN_FOR}): install pgx>=2.6.0,<2.7")


def missing_names(rules, state_cls) -> list[str]:
    """The names this module needs that `rules` (a rule core module) or `state_cls` (a State class) lack."""
    missing = [f"pgx._src.games.chess.{n}" for n in RULE_CORE_NAMES if not hasattr(rules, n)]
    if hasattr(rules, "Action") and not hasattr(rules.Action, "_from_label"):
        missing.append("pgx._src.games.chess.Action._from_label")
    fields = {f.name for f in dataclasses.fields(state_cls)} if dataclasses.is_dataclass(state_cls) else set()
    return missing + [f"{state_cls.__name__}.{n}" for n in CHESS_STATE_FIELDS if n not in fields]


if "_step_count" not in {f.name for f in dataclasses.fields(pgx.State)}:  # every game's ply count
    _refuse(["pgx.State._step_count"])


@functools.cache
def _rules():
    """pgx's chess rule core, checked once."""
    try:
        import pgx.chess
        from pgx._src.games import chess as rules
    except ImportError as e:
        _refuse([f"pgx._src.games.chess ({e})"])
    _refuse(missing_names(rules, pgx.chess.State))
    return rules


# -- State fields (any game) --------------------------------------------------------------------
def step_count(states) -> jax.Array:
    """[B] int32 plies played (pgx counts them; its public State does not say so)."""
    return states._step_count


def rule_state(states) -> GameState:
    """A chess State's rule-core GameState (board from the side to move, castling, history)."""
    return states._x


# -- the chess rule core -------------------------------------------------------------------------
def from_plane() -> jax.Array:
    """[64, 73] the to-square of each (from-square, plane) action, -1 where none."""
    return _rules().FROM_PLANE


def empty_game_state() -> GameState:
    """The rule core's default GameState (the initial position, empty histories)."""
    return _rules().GameState()


def game_state(**fields) -> GameState:
    """A rule-core GameState with `fields` set (color, board, castling_rights, en_passant, ...)."""
    return _rules().GameState(**fields)


def legal_action_mask(x: GameState) -> jax.Array:
    """[4672] bool: the legal actions of the side to move in `x`."""
    return _rules()._legal_action_mask(x)


def is_checked(x: GameState) -> jax.Array:
    """bool: the side to move in `x` is in check."""
    return _rules()._is_checked(x)


def update_history(x: GameState) -> GameState:
    """`x` with its position pushed onto the board and hash histories (repetition, observation)."""
    return _rules()._update_history(x)


def zobrist_hash(x: GameState) -> jax.Array:
    return _rules()._zobrist_hash(x)


def after_move(x: GameState, action: jax.Array) -> GameState:
    """The GameState after pgx `action` (a negative action plays 0), seen from the opponent's side:
    board, en passant and castling only, all that check and legal-move tests read (no history,
    hashes or counters: that is what makes it cheaper than a step)."""
    rules = _rules()
    y = rules._apply_move(x, rules.Action._from_label(jnp.maximum(action, 0)))
    return y._replace(board=-jnp.flip(y.board.reshape(8, 8), axis=1).flatten(),
                      en_passant=rules._flip_pos(y.en_passant),
                      castling_rights=y.castling_rights[::-1])


def chess_state(x: GameState, player_order: jax.Array):
    """A pgx chess State around a finished GameState (legal mask and history set), as pgx's own
    init and step build one: player `player_order[colour]` moves; a terminal position gets pgx's
    all-true mask, as after `step`."""
    import pgx.chess

    game = _rule_game()
    terminated = game.is_terminal(x)
    return pgx.chess.State(
        current_player=player_order[x.color],
        rewards=game.rewards(x)[player_order],
        terminated=terminated,
        legal_action_mask=jnp.where(terminated, True, x.legal_action_mask),
        observation=game.observe(x, x.color),
        _player_order=player_order,
        _x=x,
    )


@functools.cache
def _rule_game():
    return _rules().Game()


def fix_chess_start_hash(states):
    """pgx 2.6 seeds the repetition history with a hard-coded hash of the start position that
    differs from its own Zobrist hash under this jax (its random tables changed), so a return to
    the start position would not count towards threefold repetition. Store the real hash."""
    x = states._x
    start = zobrist_hash(empty_game_state())
    return states.replace(_x=x._replace(hash_history=x.hash_history.at[:, 0].set(start)))
