"""The compact chess action space: the 1858 moves that can ever be legal, side-to-move view.

A move is seen from the side to move (for black the ranks are mirrored, as in pgx), so one
index means "the same move" for both colours and a policy head needs 1858 outputs instead of
pgx's 4672 (as Leela). The set is every pgx action whose destination is on the board:
1792 queen-style and knight moves between squares, and 66 under-promotions (22 pawn moves to
the last rank x rook/bishop/knight); a queen promotion is the plain pawn move, as in pgx.
Indices are in pgx action order (not lc0's order).

Arrays (numpy, read-only):
  COMPACT_TO_PGX [1858] int32: pgx action of each compact index.
  PGX_TO_COMPACT [4672] int32: compact index of each pgx action, -1 if never legal.
  COMPACT_UCI [1858] str: the move as UCI when white is to move (the side-to-move view);
    queen promotions carry no 'q' (see chess_bridge).
  COMPACT_UCI_ABSOLUTE [2, 1858] str: UCI in absolute squares, [0] white to move, [1] black.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from games import chess_bridge

NUM_COMPACT_ACTIONS = 1858

COMPACT_TO_PGX = np.flatnonzero(chess_bridge.PGX_UCI[chess_bridge.WHITE] != "").astype(np.int32)
PGX_TO_COMPACT = np.full(chess_bridge.NUM_PGX_ACTIONS, -1, np.int32)
PGX_TO_COMPACT[COMPACT_TO_PGX] = np.arange(len(COMPACT_TO_PGX), dtype=np.int32)
COMPACT_UCI_ABSOLUTE = chess_bridge.PGX_UCI[:, COMPACT_TO_PGX]
COMPACT_UCI = COMPACT_UCI_ABSOLUTE[chess_bridge.WHITE]
for _table in (COMPACT_TO_PGX, PGX_TO_COMPACT, COMPACT_UCI_ABSOLUTE, COMPACT_UCI):
    _table.setflags(write=False)
assert len(COMPACT_TO_PGX) == NUM_COMPACT_ACTIONS, len(COMPACT_TO_PGX)


# --- jittable maps (jnp; work on any leading batch shape) --------------------------------------
def legal_mask(pgx_mask: jnp.ndarray) -> jnp.ndarray:
    """pgx legal mask [..., 4672] bool -> compact legal mask [..., 1858] bool (jittable).
    Terminal states come out all-true, as pgx's own mask."""
    return jnp.take(pgx_mask, jnp.asarray(COMPACT_TO_PGX), axis=-1)


def to_pgx(compact_actions: jnp.ndarray) -> jnp.ndarray:
    """Compact indices [...] -> pgx action ids [...] int32 (jittable)."""
    return jnp.asarray(COMPACT_TO_PGX)[compact_actions]


def from_pgx(pgx_actions: jnp.ndarray) -> jnp.ndarray:
    """pgx action ids [...] -> compact indices [...] int32, -1 for never-legal actions (jittable)."""
    return jnp.asarray(PGX_TO_COMPACT)[pgx_actions]


def scatter_to_pgx(values: jnp.ndarray, fill=-jnp.inf) -> jnp.ndarray:
    """Compact logits/probabilities [..., 1858] -> [..., 4672] with `fill` on never-legal actions,
    e.g. to feed a compact policy head to a search over pgx actions (jittable)."""
    out = jnp.full(values.shape[:-1] + (chess_bridge.NUM_PGX_ACTIONS,), fill, values.dtype)
    return out.at[..., jnp.asarray(COMPACT_TO_PGX)].set(values)


def gather_from_pgx(values: jnp.ndarray) -> jnp.ndarray:
    """Values over pgx actions [..., 4672] -> [..., 1858] (e.g. a search's visit policy)."""
    return jnp.take(values, jnp.asarray(COMPACT_TO_PGX), axis=-1)


# --- UCI (python) -----------------------------------------------------------------------------
def uci_to_compact(uci: str, white_to_move: bool) -> int:
    """Absolute UCI move (e.g. 'e7e8q') -> compact index; ValueError if it has none."""
    return int(PGX_TO_COMPACT[chess_bridge.uci_to_pgx_action(uci, white_to_move)])


def compact_to_uci(index: int, white_to_move: bool) -> str:
    """Compact index -> absolute UCI move (no 'q' on queen promotions)."""
    if not 0 <= int(index) < NUM_COMPACT_ACTIONS:
        raise ValueError(f"compact action {index} out of range [0, {NUM_COMPACT_ACTIONS})")
    return str(COMPACT_UCI_ABSOLUTE[0 if white_to_move else 1, int(index)])
