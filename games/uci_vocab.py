"""The searchless-chess move vocabulary: 1968 UCI moves (Ruoss et al. 2024, appendix A.1).

The vocabulary is every move that can be legal in some position, in absolute (white's)
coordinates as UCI strings are: the queen-style and knight moves between any two squares
(1792; castling is the king's two-square move, e.g. 'e1g1') plus the pawn promotions to
q/r/b/n from the 7th to the 8th rank and from the 2nd to the 1st (2 x 22 x 4 = 176),
sorted alphanumerically (case-sensitive, Python's string order) as the paper specifies.

  MOVES: tuple of the 1968 UCI strings; MOVE_TO_INDEX: dict UCI -> index.
  VOCAB_TO_PGX [2, 1968] int32: pgx action of each move, [0] white to move, [1] black; -1
    where the move is impossible for that colour (e.g. 'e2e1q' for white).
"""
from __future__ import annotations

import chess
import numpy as np

from games import chess_bridge

NUM_MOVES = 1968


def _all_moves() -> list[str]:
    moves = []
    empty = chess.BaseBoard.empty()
    for square in chess.SQUARES:
        targets = set()
        for symbol in ("Q", "N"):  # a queen and a knight reach every non-promotion move
            empty.set_piece_at(square, chess.Piece.from_symbol(symbol))
            targets |= set(empty.attacks(square))
        empty.remove_piece_at(square)
        moves += [chess.Move(square, target).uci() for target in targets]
    for from_rank, to_rank in ((6, 7), (1, 0)):
        for file in range(8):
            for to_file in range(max(file - 1, 0), min(file + 2, 8)):
                for piece in (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT):
                    move = chess.Move(chess.square(file, from_rank), chess.square(to_file, to_rank), piece)
                    moves.append(move.uci())
    return sorted(moves)


MOVES: tuple[str, ...] = tuple(_all_moves())
MOVE_TO_INDEX: dict[str, int] = {move: index for index, move in enumerate(MOVES)}
assert len(MOVES) == len(MOVE_TO_INDEX) == NUM_MOVES, len(MOVES)


def _vocab_to_pgx() -> np.ndarray:
    table = np.full((2, NUM_MOVES), -1, np.int32)
    for index, uci in enumerate(MOVES):
        move = chess.Move.from_uci(uci)
        for colour in (chess_bridge.WHITE, chess_bridge.BLACK):
            table[colour, index] = chess_bridge.MOVE_TO_PGX[colour, move.from_square, move.to_square,
                                                            move.promotion or 0]
    return table


VOCAB_TO_PGX = _vocab_to_pgx()
VOCAB_TO_PGX.setflags(write=False)


def move_to_index(uci: str) -> int:
    """UCI move -> vocabulary index; ValueError naming the move if it is not in the vocabulary
    (a queen promotion must carry its 'q', as python-chess writes it)."""
    try:
        return MOVE_TO_INDEX[uci]
    except KeyError:
        raise ValueError(f"move {uci!r} is not in the 1968-move UCI vocabulary") from None


def index_to_move(index: int) -> str:
    """Vocabulary index -> UCI move."""
    if not 0 <= int(index) < NUM_MOVES:
        raise ValueError(f"vocabulary index {index} out of range [0, {NUM_MOVES})")
    return MOVES[int(index)]


def board_legal_mask(board: chess.Board) -> np.ndarray:
    """[1968] bool: the legal moves of a python-chess board in the vocabulary."""
    mask = np.zeros(NUM_MOVES, bool)
    mask[[MOVE_TO_INDEX[move.uci()] for move in board.legal_moves]] = True
    return mask


def pgx_action_to_index(action: int, board: chess.Board) -> int:
    """pgx action id in `board` -> vocabulary index (the board supplies the queen-promotion 'q')."""
    return move_to_index(chess_bridge.pgx_action_to_move(action, board).uci())
