"""Chessformer square encoding: a python-chess board (with its move stack) -> [64, 112] features.

One token per square, a1, b1, ..., h8 as seen from the side to move (for black the ranks are
mirrored, square ^ 56, so the side to move always plays "up"). Features per token, in Leela's
112-plane order:
  13 * t + [0:12]  pieces of the position t plies ago (t = 0..7): the side to move's
                   P N B R Q K, then the opponent's P N B R Q K ("side to move" is the current
                   one for every t). Where the game is shorter than 7 plies the earliest
                   position fills the missing frames (repetition flag included).
  13 * t + 12      repetition flag: the position t plies ago occurred earlier in the game
  104:108          castling rights: ours queen-side, ours king-side, theirs queen-side, theirs king-side
  108              side to move is black
  109              halfmove (fifty-move) clock / 100
  110, 111         constants 0 and 1
"""
from __future__ import annotations

from typing import Sequence

import chess
import numpy as np

NUM_SQUARES = 64
NUM_FEATURES = 112
HISTORY = 8
_PLANES_PER_POSITION = 13
_PIECE_TYPES = (chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING)


def _bits(bitboard: int) -> np.ndarray:
    """Bitboard -> [64] uint8 with element i = square i."""
    return np.unpackbits(np.array([bitboard], "<u8").view(np.uint8), bitorder="little")


def _position_key(board: chess.Board) -> str:
    # Placement, side, castling and *legal* en passant: what makes two positions the same.
    return " ".join(board.fen().split(" ")[:4])


def _piece_planes(board: chess.Board, us: chess.Color) -> np.ndarray:
    """[12, 64] piece planes of `board` from `us`'s side, not yet flipped."""
    return np.stack([_bits(board.pieces_mask(piece, colour))
                     for colour in (us, not us) for piece in _PIECE_TYPES])


def encode_board(board: chess.Board) -> np.ndarray:
    """One board with its move stack -> features [64, 112] float32."""
    us = board.turn
    past = board.copy()
    # Positions from now back to the last irreversible move can repeat; older ones cannot,
    # but the 8-frame history may need them.
    depth = max(HISTORY - 1, board.halfmove_clock)
    frames, keys = [], []
    for t in range(depth + 1):
        if t < HISTORY:
            frames.append(_piece_planes(past, us))
        keys.append(_position_key(past))
        if not past.move_stack:
            break
        past.pop()
    # keys[t] is the position t plies ago; it is a repetition if it occurs further back.
    repeated = [keys[t] in keys[t + 1:] for t in range(min(len(frames), len(keys)))]
    while len(frames) < HISTORY:  # short history: repeat the earliest position
        frames.append(frames[-1])
        repeated.append(repeated[-1])

    features = np.zeros((NUM_FEATURES, NUM_SQUARES), np.float32)
    for t in range(HISTORY):
        features[_PLANES_PER_POSITION * t:_PLANES_PER_POSITION * t + 12] = frames[t]
        features[_PLANES_PER_POSITION * t + 12] = repeated[t]
    features[104] = board.has_queenside_castling_rights(us)
    features[105] = board.has_kingside_castling_rights(us)
    features[106] = board.has_queenside_castling_rights(not us)
    features[107] = board.has_kingside_castling_rights(not us)
    features[108] = us == chess.BLACK
    features[109] = board.halfmove_clock / 100.0
    features[111] = 1.0
    if us == chess.BLACK:  # mirror ranks: square s -> s ^ 56
        features = features.reshape(NUM_FEATURES, 8, 8)[:, ::-1, :].reshape(NUM_FEATURES, NUM_SQUARES)
    return np.ascontiguousarray(features.T)


def encode_boards(boards: Sequence[chess.Board]) -> np.ndarray:
    """Boards with their move stacks -> features [B, 64, 112] float32."""
    if not boards:
        return np.zeros((0, NUM_SQUARES, NUM_FEATURES), np.float32)
    return np.stack([encode_board(board) for board in boards])
