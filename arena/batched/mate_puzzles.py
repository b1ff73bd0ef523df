"""Lichess mate puzzles solved by a batched chess mover (a search, or a raw policy): the fast path of
bench/mates.py and the in-run evaluator (arena/suites plays any agent one position at a time).

    puzzles = load_mate_puzzles("mateIn2", 100)
    solved = solve_mate_puzzles(puzzles, policy_mover(apply_fn, variables))   # -> int

The solver plays the whole line (the opponent's replies are the puzzle's); a solver move that mates
is accepted even if it is not the puzzle's. Batches are padded to powers of two, so a shrinking set
of unsolved puzzles compiles a search only a few times.
"""
from __future__ import annotations

import csv
import dataclasses
from pathlib import Path
from typing import Callable

import chess
import jax
import jax.numpy as jnp
import numpy as np

BatchMover = Callable[[object, jax.Array], np.ndarray]  # (states [B], key) -> pgx actions [B]


@dataclasses.dataclass
class MatePuzzle:
    puzzle_id: str
    board: chess.Board  # the solver to move
    line: list[str]  # UCI moves from `board`: solver, opponent, solver, ...
    solved: bool = False
    failed: bool = False


def load_mate_puzzles(theme: str, count: int, path: str | Path | None = None) -> list[MatePuzzle]:
    """The first `count` puzzles of the themed Lichess file with `theme` (e.g. mateIn1)."""
    if path is None:
        from runtime import data_file
        path = data_file("puzzles", "lichess_puzzles_themed.csv")
    out = []
    with open(path) as f:
        for row in csv.DictReader(f):
            if theme in row["Themes"].split():
                board = chess.Board(row["FEN"])
                moves = row["Moves"].split()
                board.push_uci(moves[0])  # Lichess: the FEN is before the opponent's setup move
                out.append(MatePuzzle(row["PuzzleId"], board, moves[1:]))
                if len(out) == count:
                    break
    return out


def search_mover(search_fn: Callable, variables) -> BatchMover:
    """A batched search (search.make_search) playing its `action`."""
    return lambda states, key: np.asarray(jax.device_get(search_fn(variables, states, key).action))


def policy_mover(apply_fn: Callable, variables) -> BatchMover:
    """The raw policy: the legal action with the highest logit. apply_fn(variables, obs) ->
    NetworkOutput (policy_logits [B, A])."""
    from arena.batched.gauntlet import greedy_policy
    best = greedy_policy(apply_fn)
    return lambda states, key: np.asarray(best(variables, states))


def _padded(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def solve_mate_puzzles(puzzles: list[MatePuzzle], mover: BatchMover, seed: int = 0) -> tuple[int, int]:
    """Plays every puzzle's line with `mover`; returns (solved, positions searched)."""
    from games import chess_bridge
    searched, ply = 0, 0
    while True:
        live = [p for p in puzzles if not (p.solved or p.failed)]
        if not live:
            break
        batch = live + [live[0]] * (_padded(len(live)) - len(live))
        states = jax.tree.map(lambda *x: jnp.stack(x), *[chess_bridge.board_to_state(p.board) for p in batch])
        actions = mover(states, jax.random.PRNGKey(seed + ply))
        searched += len(live)
        for b, p in enumerate(live):
            move = chess_bridge.pgx_action_to_move(int(actions[b]), p.board)
            p.board.push(move)
            if p.board.is_checkmate():
                p.solved = True
            elif move.uci() != p.line[0] or len(p.line) < 3:
                p.failed = True
            else:
                p.board.push_uci(p.line[1])
                p.line = p.line[2:]
        ply += 1
    return sum(p.solved for p in puzzles), searched
