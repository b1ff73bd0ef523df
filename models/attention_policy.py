"""Chessformer's attention policy head and its maps into the action spaces callers use.

Squares are tokens in the side-to-move frame, rank-major like python-chess: token s = rank * 8 + file
with rank counted from the mover's side (a1=0, b1=1, ..., h8=63 for white; ranks mirrored for black,
as pgx and Leela do). The head scores every (from, to) pair by a scaled dot product of a query
projection of `from` and a key projection of `to`; under-promotions add an offset, projected from
the key of the last-rank destination square, to the 7th->8th rank pair logit. A queen promotion is
the plain pair (pgx and the compact space make the same choice); castling is the king's two-square
move and en passant the pawn's diagonal move, so both are plain pairs too.

Flat move space ("pair space", PAIR_SPACE entries):
    [0, 4096)       from * 64 + to
    [4096, 4288)    4096 + (from_file * 8 + to_file) * 3 + piece, piece 0 rook, 1 bishop, 2 knight
    4288            a constant very low logit for actions that are never a move (pgx filler ids)
Gathering with an index table maps it into pgx's 4672 ids, the compact 1858 space, or the 1968
searchless vocabulary (which is in absolute squares: one table per colour).
"""
from __future__ import annotations

import functools
import importlib
from typing import Sequence

import chess
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

NUM_PAIRS = 64 * 64
NUM_UNDERPROMOTIONS = 8 * 8 * 3
NEVER = NUM_PAIRS + NUM_UNDERPROMOTIONS  # index of the constant filler logit
PAIR_SPACE = NEVER + 1
NEVER_LOGIT = -1e9  # finite (softmax and masking stay NaN-free) and far below any real logit
_UNDER_PIECES = {chess.ROOK: 0, chess.BISHOP: 1, chess.KNIGHT: 2}  # pgx's plane // 3 order


def _chess_table(module: str):
    """games.<module> (chess_bridge, compact_actions, uci_vocab), imported on first use: building the
    tables (pgx's chess rule core) costs seconds that a run of another game never pays. Under
    ensure_compile_time_eval, so that a first use inside a jit trace still builds concrete arrays."""
    with jax.ensure_compile_time_eval():
        return importlib.import_module(f"games.{module}")


class AttentionPolicyHead(nn.Module):
    """tokens [B, 64, D] -> pair-space logits [B, PAIR_SPACE] (side-to-move frame)."""

    policy_dim: int  # width of the query/key projections
    dtype: jnp.dtype = jnp.float32  # of the projections and the pair product; the logits come out float32

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        batch, dt = x.shape[0], self.dtype
        queries = nn.Dense(self.policy_dim, dtype=dt, name="query")(x)  # [B, 64, P]
        keys = nn.Dense(self.policy_dim, dtype=dt, name="key")(x)  # [B, 64, P]
        pairs = jnp.einsum("bfp,btp->bft", queries, keys).astype(jnp.float32) / np.sqrt(np.float32(self.policy_dim))
        # Under-promotions: 7th-rank from-square x 8th-rank to-square, plus a per-(to, piece) offset.
        offsets = nn.Dense(3, dtype=dt, name="promotion")(keys[:, 56:64]).astype(jnp.float32)  # [B, 8 to-files, 3]
        last_ranks = pairs[:, 48:56, 56:64]  # [B, 8 from-files, 8 to-files]
        under = last_ranks[..., None] + offsets[:, None, :, :]  # [B, 8, 8, 3]
        never = jnp.full((batch, 1), NEVER_LOGIT, pairs.dtype)
        return jnp.concatenate([pairs.reshape(batch, NUM_PAIRS), under.reshape(batch, -1), never], axis=1)


def pair_index(from_square: int, to_square: int, promotion: int | None) -> int:
    """Pair-space index of a move in the side-to-move frame (python-chess squares and piece types)."""
    if promotion in _UNDER_PIECES:
        if chess.square_rank(from_square) != 6 or chess.square_rank(to_square) != 7:
            return NEVER
        from_file, to_file = chess.square_file(from_square), chess.square_file(to_square)
        return NUM_PAIRS + (from_file * 8 + to_file) * 3 + _UNDER_PIECES[promotion]
    return from_square * 64 + to_square


def uci_pair_indices(ucis: Sequence[str], mirror: bool = False) -> np.ndarray:
    """UCI moves [A] -> int32 pair-space indices [A]; `mirror` flips ranks (absolute -> black's frame)."""
    out = np.empty(len(ucis), np.int32)
    for i, uci in enumerate(ucis):
        move = chess.Move.from_uci(uci)
        f, t = move.from_square, move.to_square
        if mirror:
            f, t = chess.square_mirror(f), chess.square_mirror(t)
        out[i] = pair_index(f, t, move.promotion)
    return out


@functools.lru_cache(maxsize=None)
def pgx_index() -> np.ndarray:
    """[4672] pair-space index of each pgx chess action (pgx actions are in the side-to-move frame)."""
    cb = _chess_table("chess_bridge")
    white = cb.WHITE  # white's frame is the side-to-move frame
    out = np.full(cb.NUM_PGX_ACTIONS, NEVER, np.int32)
    for action in range(cb.NUM_PGX_ACTIONS):
        f, t = int(cb.PGX_FROM_SQUARE[white, action]), int(cb.PGX_TO_SQUARE[white, action])
        if f >= 0:
            out[action] = pair_index(f, t, int(cb.PGX_PROMOTION[white, action]) or None)
    out.setflags(write=False)
    return out


def gather(pair_logits: jax.Array, index: np.ndarray) -> jax.Array:
    """pair_logits [B, PAIR_SPACE], index [A] -> [B, A]."""
    return jnp.take(pair_logits, jnp.asarray(index), axis=1)


def gather_by_colour(pair_logits: jax.Array, index: np.ndarray, is_black: jax.Array) -> jax.Array:
    """pair_logits [B, PAIR_SPACE], index [2, A] (white, black), is_black [B] bool -> [B, A]."""
    per_row = jnp.asarray(index)[jnp.asarray(is_black, jnp.int32)]  # [B, A]
    return jnp.take_along_axis(pair_logits, per_row, axis=1)



@functools.lru_cache(maxsize=None)
def compact_index() -> np.ndarray:
    """[1858] pair-space index of the compact moves (games/compact_actions.py, side-to-move frame)."""
    out = uci_pair_indices(list(_chess_table("compact_actions").COMPACT_UCI))
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=None)
def vocab_index() -> np.ndarray:
    """[2, 1968] pair-space index of the searchless vocabulary (games/uci_vocab.py, absolute UCI):
    row 0 for white to move, row 1 for black (ranks mirrored into black's frame)."""
    moves = list(_chess_table("uci_vocab").MOVES)
    out = np.stack([uci_pair_indices(moves), uci_pair_indices(moves, mirror=True)])
    out.setflags(write=False)
    return out
