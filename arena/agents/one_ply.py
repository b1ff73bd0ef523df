"""One-ply move values: the rules' value of a finished game, else 1 - the successor's value.

The SV student's move rule (arena/agents/student.py) and distill's completion of a self-play corpus's
action values (distill/selfplay_corpus.py) both score moves this way.
"""
from __future__ import annotations

from typing import Callable, Sequence

import chess
import numpy as np

BoardValues = Callable[[Sequence[chess.Board]], np.ndarray]  # boards [N] -> win prob of side to move [N]


def _by_rules(board: chess.Board, moves: Sequence[chess.Move], keep_successors: bool):
    """(scores [len(moves)]: the rules' value or NaN, rows of the non-terminal moves, their
    successor boards if `keep_successors`): one push per move."""
    scores = np.full(len(moves), np.nan)
    rows, successors = [], []
    for i, move in enumerate(moves):
        board.push(move)
        outcome = board.outcome(claim_draw=False)
        if outcome is not None:
            scores[i] = 0.5 if outcome.winner is None else 1.0
        else:
            rows.append(i)
            if keep_successors:
                successors.append(board.copy())
        board.pop()
    return scores, rows, successors


def rules_values(board: chess.Board, moves: Sequence[chess.Move]) -> np.ndarray:
    """[len(moves)] the mover's result of each move that ends the game by the rules (1 mate, 0.5 a
    draw: stalemate, insufficient material, fivefold, 75 moves), NaN where the game goes on."""
    return _by_rules(board, moves, keep_successors=False)[0]


def one_ply_values(board: chess.Board, moves: Sequence[chess.Move], board_values: BoardValues) -> np.ndarray:
    """[len(moves)] win probability for the mover of each move: 1 for a mate, 0.5 for a draw by rule,
    else 1 - board_values(successor) (one batched call for all non-terminal successors)."""
    return one_ply_values_many([(board, moves)], board_values)[0]


def one_ply_values_many(positions: Sequence[tuple[chess.Board, Sequence[chess.Move]]],
                        board_values: BoardValues) -> list[np.ndarray]:
    """`one_ply_values` of each (board, moves) pair, with one `board_values` call for the successors
    of them all (a network evaluates a few thousand boards per call far faster than one position's)."""
    ruled = [_by_rules(board, moves, keep_successors=True) for board, moves in positions]
    successors = [b for _, _, boards in ruled for b in boards]
    if successors:
        values = 1.0 - np.asarray(board_values(successors), np.float64)
        start = 0
        for scores, rows, boards in ruled:
            scores[rows] = values[start:start + len(boards)]
            start += len(boards)
    return [scores for scores, _, _ in ruled]
