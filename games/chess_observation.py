"""python-chess boards -> pgx's chess observation [N, 8, 8, 119], in numpy, without a pgx State.

    obs = boards_to_observations(boards)   # == chess_bridge.fens_to_states(fens).observation

For a value or policy read of many boards (a teacher labelling a corpus's moves: every successor of
every move, and every board after the opponent's captures) building pgx States costs most of the
time: each computes its legal-action mask, which the network never reads. This encodes the board
alone, exactly as a State built from the board's FEN would show it (no history before the
position: history steps 1-7 hold no pieces and pgx's "no repetition" plane; the ply count plane 0),
which tests/test_chess_observation.py checks against pgx on positions from random games.

Plane layout (pgx 2.6, from the side to move; squares as a diagram seen by the mover, its first rank
at the bottom): per history step t = 0..7 planes 14t..14t+5 the mover's pawn, knight, bishop, rook,
queen, king; 14t+6..14t+11 the opponent's; 14t+12 "not a repetition", 14t+13 "a repetition"; then 112 the
colour (1 black), 113 the ply count / 512, 114-117 castling (mover queen-side, king-side, opponent
queen-side, king-side), 118 the no-progress count / 100.
"""
from __future__ import annotations

from typing import Sequence

import chess
import numpy as np

NUM_PLANES = 119
_HISTORY = 8
# Plane square (row * 8 + col) -> python-chess square: white sees rank 8 in row 0, black rank 1.
_SQUARE_OF = np.stack([np.arange(64) ^ 56, np.arange(64)])  # [2 (0 white, 1 black to move), 64]
_CASTLING = {chess.WHITE: (chess.BB_A1, chess.BB_H1, chess.BB_A8, chess.BB_H8),
             chess.BLACK: (chess.BB_A8, chess.BB_H8, chess.BB_A1, chess.BB_H1)}


def _bitboards(board: chess.Board) -> list[int]:
    """The 12 piece bitboards of `board`: the mover's six kinds, then the opponent's."""
    mine, theirs = board.occupied_co[board.turn], board.occupied_co[not board.turn]
    kinds = (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings)  # both colours
    return [kind & mine for kind in kinds] + [kind & theirs for kind in kinds]


def boards_to_observations(boards: Sequence[chess.Board]) -> np.ndarray:
    """[N, 8, 8, 119] float32: pgx's observation of each board for its side to move, equal to
    `chess_bridge.fens_to_states([b.fen() for b in boards]).observation` (ignores the move stack)."""
    n = len(boards)
    masks = np.array([_bitboards(b) for b in boards], np.uint64).reshape(n, 12)
    black = np.array([b.turn == chess.BLACK for b in boards], np.intp)
    rights = [b.clean_castling_rights() for b in boards]
    castling = np.array([[bool(r & sq) for sq in _CASTLING[b.turn]] for b, r in zip(boards, rights)],
                        np.float32).reshape(n, 4)
    halfmove = np.array([b.halfmove_clock for b in boards], np.float32)

    bits = np.unpackbits(masks.astype("<u8").view(np.uint8).reshape(n, 12, 8), axis=-1, bitorder="little")
    pieces = np.take_along_axis(bits.reshape(n, 12, 64), _SQUARE_OF[black][:, None, :], axis=-1)

    planes = np.zeros((n, NUM_PLANES, 64), np.float32)
    planes[:, :12] = pieces
    planes[:, 12:14 * _HISTORY:14] = 1.0  # every history step "not repeated" (pgx's rep == 0 plane)
    planes[:, 112] = black[:, None]
    planes[:, 114:118] = castling[:, :, None]
    planes[:, 118] = halfmove[:, None] * np.float32(0.01)  # as XLA compiles pgx's `/ 100.0`: bit-equal
    return planes.reshape(n, NUM_PLANES, 8, 8).transpose(0, 2, 3, 1)
