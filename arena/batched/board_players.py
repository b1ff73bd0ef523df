"""Reference players for the small pgx games, written on plain numpy boards (independent of pgx's
rules): perfect tic-tac-toe (minimax) and depth-limited alpha-beta connect four. The in-run
evaluator's anchors for those games (arena/batched/gauntlet.py movers via `board_mover`) and the opponents of
bench/connect_four_strength.py.

    mover = board_mover("connect_four", "alphabeta:depth=4", seed=0)   # a gauntlet Mover
"""
from __future__ import annotations

import functools
from typing import Optional

import numpy as np

ROWS, COLS = 6, 7
WINDOWS = ([[(r, c + i) for i in range(4)] for r in range(ROWS) for c in range(COLS - 3)]
           + [[(r + i, c) for i in range(4)] for r in range(ROWS - 3) for c in range(COLS)]
           + [[(r + i, c + i) for i in range(4)] for r in range(ROWS - 3) for c in range(COLS - 3)]
           + [[(r + 3 - i, c + i) for i in range(4)] for r in range(ROWS - 3) for c in range(COLS - 3)])


# Bitboards (python ints): column c, height h from the bottom (row ROWS - 1) is bit c * 7 + h; each
# column's seventh bit stays empty so that shifted lines never wrap into the next column.
_H = ROWS + 1
_TOP = [1 << (c * _H + ROWS - 1) for c in range(COLS)]
_ORDER = sorted(range(COLS), key=lambda c: abs(c - 3))  # centre first: the same order as ever
_WINDOW_MASKS = [sum(1 << (c * _H + ROWS - 1 - r) for r, c in w) for w in WINDOWS]
_WINDOW_SCORE = (0, 1, 4, 16, 0)


def _bits(board: np.ndarray, who: int) -> int:
    """board [6, 7] (0 empty, 1 side to move, 2 opponent; row 5 = bottom) -> bitboard of `who`."""
    rows, cols = np.nonzero(board == who)
    return sum(1 << (int(c) * _H + ROWS - 1 - int(r)) for r, c in zip(rows, cols))


def _drop_bit(occupied: int, col: int) -> int:
    """The bit a piece dropped in `col` lands on (the column's lowest empty cell)."""
    height = ((occupied >> (col * _H)) & ((1 << ROWS) - 1)).bit_count()
    return 1 << (col * _H + height)


def _wins(bits: int) -> bool:
    for shift in (1, _H, _H - 1, _H + 1):  # vertical, horizontal, the two diagonals
        pairs = bits & (bits >> shift)
        if pairs & (pairs >> (2 * shift)):
            return True
    return False


def _heuristic(mine: int, theirs: int) -> float:
    """Open windows of four: 1, 4, 16 for one, two, three pieces of one side and none of the other."""
    score = 0
    for mask in _WINDOW_MASKS:
        a, b = mine & mask, theirs & mask
        if not b:
            score += _WINDOW_SCORE[a.bit_count()]
        elif not a:
            score -= _WINDOW_SCORE[b.bit_count()]
    return float(score)


def _negamax(mine: int, theirs: int, depth: int, alpha: float, beta: float) -> float:
    """Value for the side to move (`mine`), `theirs` having just moved."""
    if _wins(theirs):
        return -1e6 - depth
    occupied = mine | theirs
    moves = [c for c in _ORDER if not occupied & _TOP[c]]
    if not moves:
        return 0.0
    if depth == 0:
        return _heuristic(mine, theirs)
    best = -np.inf
    for c in moves:
        best = max(best, -_negamax(theirs, mine | _drop_bit(occupied, c), depth - 1, -beta, -alpha))
        alpha = max(alpha, best)
        if alpha >= beta:
            break
    return best


def alphabeta_scores(board: np.ndarray, depth: int) -> dict[int, float]:
    """Negamax value (window heuristic at the leaves, +-1e6 for wins) of each legal column of `board`
    [6, 7] (0 empty, 1 side to move, 2 opponent; row 5 = bottom) for the side to move."""
    mine, theirs = _bits(board, 1), _bits(board, 2)
    occupied = mine | theirs
    return {c: -_negamax(theirs, mine | _drop_bit(occupied, c), depth - 1, -np.inf, np.inf)
            for c in range(COLS) if not occupied & _TOP[c]}


def alphabeta_move(board: np.ndarray, depth: int, rng) -> int:
    """The best column by `alphabeta_scores` (random among equally good ones)."""
    scores = alphabeta_scores(board, depth)
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


def ladder_opponents(game: str, ladder, engines: Optional[tuple[str, ...]]) -> tuple[str, ...]:
    """The fixed opponents of `game`'s evaluation: `engines`, else its ladder's (games/ladders.py
    `Ladder`), each checked as the game's kind of player (arena agent specs where the ladder is FEN and
    UCI, as chess's; else board players, see parse_player); ValueError names a bad one."""
    specs = ladder.opponents if engines is None else engines
    for spec in specs:
        if ladder.fen_uci:
            from arena.agents.spec import parse_spec
            parse_spec(spec)
        else:
            parse_player(game, spec)
    return tuple(specs)


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
