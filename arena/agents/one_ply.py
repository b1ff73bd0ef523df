"""One-ply move values: the rules' value of a finished game, else 1 - the successor's value; and the
same with the opponent's captures read one ply further (`capture_reply_values_many`).

The SV student's move rule (arena/agents/student.py) and distill's completion of a self-play corpus's
action values (distill/selfplay_corpus.py) score moves this way.
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


def capture_reply_values_many(positions: Sequence[tuple[chess.Board, Sequence[chess.Move]]],
                              board_values: BoardValues) -> list[np.ndarray]:
    """`one_ply_values_many` with the opponent's captures read: a move's value is the lowest of
    1 - V(successor) (the opponent's quiet move, as a quiescence search's stand-pat) and, for each
    capture the opponent has there, V of the board after it (the rules' value where that ends the
    game). A piece the move leaves hanging then counts against it, which a network's value of the
    successor alone often misses (docs/experiments/2026-11-28-students-of-the-distilled-network.md).
    One `board_values` call for every successor and every board after a capture."""
    ruled = [_by_rules(board, moves, keep_successors=True) for board, moves in positions]
    boards: list[chess.Board] = []
    plans = []  # per successor: (its row in boards, the rows after each capture, the rules' values)
    for _, _, successors in ruled:
        for successor in successors:
            own, after, by_rules = len(boards), [], []
            boards.append(successor)
            for reply in list(successor.generate_legal_captures()):
                successor.push(reply)
                outcome = successor.outcome(claim_draw=False)
                if outcome is None:
                    after.append(len(boards))
                    boards.append(successor.copy())
                else:  # the opponent mates us, or draws by rule
                    by_rules.append(0.5 if outcome.winner is None else 0.0)
                successor.pop()
            plans.append((own, after, by_rules))
    values = np.asarray(board_values(boards), np.float64) if boards else np.zeros(0)
    plan = iter(plans)
    for scores, rows, _ in ruled:
        for row in rows:
            own, after, by_rules = next(plan)
            scores[row] = min([1.0 - values[own], *values[after], *by_rules])
    return [scores for scores, _, _ in ruled]
