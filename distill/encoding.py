"""Student inputs and action ids, from games/ (77-token FEN, 1968-move vocabulary, 64x112 squares).

The one place distill/ touches the encodings (datasets, trainer); the students play through
arena/agents/student.py, which calls the same games/ encoders.
"""
from __future__ import annotations

from typing import Sequence

import chess
import numpy as np

from games import fen_tokens, square_encoding, uci_vocab

NUM_ACTIONS = uci_vocab.NUM_MOVES  # 1968
FEN_LENGTH = fen_tokens.SEQUENCE_LENGTH  # 77


def tokens(fens: Sequence[str]) -> np.ndarray:
    """FENs [N] -> FEN tokens [N, 77] int32."""
    if not len(fens):
        return np.zeros((0, FEN_LENGTH), np.int32)
    return np.asarray(fen_tokens.tokenize_batch(fens), np.int32)


def action_id(uci: str) -> int:
    """A UCI move -> its index in the 1968 vocabulary (absolute squares, as the paper)."""
    return uci_vocab.move_to_index(uci)


def action_ids(ucis: Sequence[str]) -> np.ndarray:
    return np.array([action_id(u) for u in ucis], np.int32)


def squares(boards: Sequence[chess.Board | str]) -> np.ndarray:
    """Boards (with their move stacks: history planes) or FENs [N] -> Chessformer square
    features [N, 64, 112] float32 (side-to-move frame)."""
    boards = [chess.Board(b) if isinstance(b, str) else b for b in boards]
    return np.asarray(square_encoding.encode_boards(boards), np.float32)


def is_black(boards: Sequence[chess.Board | str]) -> np.ndarray:
    """[N] bool: black to move (the Chessformer's 1968-vocabulary head needs it)."""
    return np.array([(b.split()[1] == "b") if isinstance(b, str) else b.turn == chess.BLACK
                     for b in boards])
