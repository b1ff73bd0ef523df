"""Reference players for the small pgx games, written on plain numpy boards (independent of pgx's
rules): perfect tic-tac-toe (minimax) and depth-limited alpha-beta connect four. The in-run
evaluator's anchors for those games (arena/gauntlet.py movers via `board_mover`) and the opponents of
bench/connect_four_strength.py.

    mover = board_mover("connect_four", "alphabeta:depth=4", seed=0)   # a gauntlet Mover
"""
from __future__ import annotations

import functools

import numpy as np

ROWS, COLS = 6, 7
WINDOWS = ([[(r, c + i) for i in range(4)] for r in range(ROWS) for c in range(COLS - 3)]
           + [[(r + i, c) for i in range(4)] for r in range(ROWS - 3) for c in range(COLS)]
           + [[(r + i, c + i) for i in range(4)] for r in range(ROWS - 3) for c in range(COLS - 3)]
           + [[(r + 3 - i, c + i) for i in range(4)] for r in range(ROWS - 3) for c in range(COLS - 3)])


def _drop(board: np.ndarray, col: int, who: int) -> np.ndarray | None:
    """board [6, 7] (0 empty, 1 side to move, 2 opponent; row 5 = bottom) with a piece in col."""
    rows = np.flatnonzero(board[:, col] == 0)
    if rows.size == 0:
        return None
    b = board.copy()
    b[rows[-1], col] = who
    return b


def _wins(board: np.ndarray, who: int) -> bool:
    return any(all(board[r, c] == who for r, c in w) for w in WINDOWS)


def _heuristic(board: np.ndarray) -> float:
    score = 0.0
    for w in WINDOWS:
        cells = [board[r, c] for r, c in w]
        mine, theirs = cells.count(1), cells.count(2)
        if theirs == 0:
            score += (0, 1, 4, 16, 0)[mine]
        elif mine == 0:
            score -= (0, 1, 4, 16, 0)[theirs]
    return score


def _negamax(board, depth, alpha, beta) -> float:
    """Value for the side to move (1) of `board`."""
    if _wins(board, 2):
        return -1e6 - depth
    moves = [c for c in range(COLS) if board[0, c] == 0]
    if not moves:
        return 0.0
    if depth == 0:
        return _heuristic(board)
    best = -np.inf
    for c in sorted(moves, key=lambda c: abs(c - 3)):
        child = _drop(board, c, 1)
        swapped = np.where(child == 1, 2, np.where(child == 2, 1, 0))
        best = max(best, -_negamax(swapped, depth - 1, -beta, -alpha))
        alpha = max(alpha, best)
        if alpha >= beta:
            break
    return best


def alphabeta_move(board: np.ndarray, depth: int, rng) -> int:
    scores = {}
    for c in range(COLS):
        child = _drop(board, c, 1)
        if child is not None:
            swapped = np.where(child == 1, 2, np.where(child == 2, 1, 0))
            scores[c] = -_negamax(swapped, depth - 1, -np.inf, np.inf)
    best = max(scores.values())
    return int(rng.choice([c for c, s in scores.items() if s >= best - 1e-9]))


# -- tic-tac-toe ---------------------------------------------------------------------------------
LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def _line(cells: frozenset) -> bool:
    return any(all(c in cells for c in line) for line in LINES)


@functools.lru_cache(maxsize=None)
def tic_tac_toe_value(mine: frozenset, theirs: frozenset) -> int:
    """Minimax value for the side to move: +1 win, 0 draw, -1 loss."""
    if _line(theirs):
        return -1
    empty = [c for c in range(9) if c not in mine and c not in theirs]
    if not empty:
        return 0
    return max(-tic_tac_toe_value(theirs, mine | {c}) for c in empty)


def minimax_move(board: np.ndarray, rng) -> int:
    """A perfect tic-tac-toe move (random among the optimal ones). board [3, 3]: 1 side to move, 2 other."""
    cells = board.reshape(9)
    mine, theirs = frozenset(np.flatnonzero(cells == 1).tolist()), frozenset(np.flatnonzero(cells == 2).tolist())
    scores = {c: -tic_tac_toe_value(theirs, mine | {c}) for c in range(9) if cells[c] == 0}
    best = max(scores.values())
    return int(rng.choice([c for c, s in scores.items() if s == best]))


# -- as gauntlet movers --------------------------------------------------------------------------
def _board_of(observation: np.ndarray) -> np.ndarray:
    """pgx observation [..., 2] (side-to-move plane, opponent plane) -> board of 0 / 1 / 2."""
    return observation[..., 0].astype(np.int8) * 1 + observation[..., 1].astype(np.int8) * 2


def parse_player(game: str, spec: str) -> tuple[str, int]:
    """'minimax' (tic_tac_toe) or 'alphabeta:depth=N' (connect_four) -> (kind, depth); ValueError otherwise."""
    kind, _, options = spec.partition(":")
    if game == "tic_tac_toe" and spec == "minimax":
        return "minimax", 9
    if game == "connect_four" and kind == "alphabeta":
        key, _, value = options.partition("=")
        if key == "depth" and value.isdigit() and int(value) >= 1:
            return "alphabeta", int(value)
    known = {"tic_tac_toe": "minimax", "connect_four": "alphabeta:depth=N"}.get(game, "none")
    raise ValueError(f"unknown {game} player '{spec}' (known: {known})")


def board_mover(game: str, spec: str, seed: int = 0):
    """A gauntlet Mover playing `spec` (see parse_player) on batched pgx states of `game`."""
    kind, depth = parse_player(game, spec)
    rng = np.random.default_rng(seed)

    def move(states, games, histories, key):
        obs = np.asarray(states.observation)
        legal = np.asarray(states.legal_action_mask)
        out = np.zeros(len(obs), np.int32)
        for i in range(len(obs)):
            if not legal[i].any():
                continue  # a finished game in the batch: its action is ignored
            board = _board_of(obs[i])
            out[i] = minimax_move(board, rng) if kind == "minimax" else alphabeta_move(board, depth, rng)
        return out
    return move
