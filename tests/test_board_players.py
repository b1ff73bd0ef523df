"""Connect-four alpha-beta (arena/batched/board_players.py, bitboards) against a plain numpy minimax written
here: no pruning, cell-by-cell win and window checks. Same heuristic, so the root values must agree."""
from __future__ import annotations

import numpy as np
import pytest

from arena.batched.board_players import alphabeta_move, alphabeta_scores

ROWS, COLS = 6, 7
DIRECTIONS = ((0, 1), (1, 0), (1, 1), (-1, 1))


def windows():
    for r in range(ROWS):
        for c in range(COLS):
            for dr, dc in DIRECTIONS:
                cells = [(r + i * dr, c + i * dc) for i in range(4)]
                if all(0 <= y < ROWS and 0 <= x < COLS for y, x in cells):
                    yield cells


WINDOWS = list(windows())


def won(board, who) -> bool:
    return any(all(board[y, x] == who for y, x in w) for w in WINDOWS)


def leaf_value(board) -> float:
    score = 0.0
    for w in WINDOWS:
        cells = [board[y, x] for y, x in w]
        mine, theirs = cells.count(1), cells.count(2)
        if theirs == 0:
            score += (0, 1, 4, 16, 0)[mine]
        elif mine == 0:
            score -= (0, 1, 4, 16, 0)[theirs]
    return score


def play(board, col):
    """Side to move (1) drops in col; the result is seen from the new side to move."""
    child = board.copy()
    child[np.flatnonzero(child[:, col] == 0)[-1], col] = 1
    return np.where(child == 1, 2, np.where(child == 2, 1, 0))


def minimax(board, depth) -> float:
    if won(board, 2):
        return -1e6 - depth
    moves = [c for c in range(COLS) if board[0, c] == 0]
    if not moves:
        return 0.0
    if depth == 0:
        return leaf_value(board)
    return max(-minimax(play(board, c), depth - 1) for c in moves)


def random_board(rng, plies):
    board = np.zeros((ROWS, COLS), np.int8)
    for _ in range(plies):
        if won(board, 2):
            break
        board = play(board, rng.choice([c for c in range(COLS) if board[0, c] == 0]))
    return board


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_alphabeta_scores_equal_plain_minimax(depth):
    rng = np.random.default_rng(depth)
    for _ in range(12):
        board = random_board(rng, int(rng.integers(0, 24)))
        expected = {c: -minimax(play(board, c), depth - 1) for c in range(COLS) if board[0, c] == 0}
        assert alphabeta_scores(board, depth) == expected


def test_alphabeta_takes_a_win_and_blocks_a_loss():
    rng = np.random.default_rng(0)
    board = np.zeros((ROWS, COLS), np.int8)
    board[5, 0:3] = 1          # three of ours on the bottom row: column 3 wins
    board[5, 4:6] = 2
    board[4, 4] = 2
    assert alphabeta_move(board, 2, rng) == 3
    board = np.zeros((ROWS, COLS), np.int8)
    board[5:2:-1, 6] = 2       # three of theirs stacked in column 6: we must block it
    board[5, 0:2] = 1
    board[4, 0] = 1
    assert alphabeta_move(board, 2, rng) == 6
