"""Lichess puzzles: read the CSV, play the whole line with an agent, bands by rating.

Format (https://database.lichess.org/#puzzles): `FEN` is the position *before* the opponent's
setup move; `Moves` is a UCI line whose move 0 is that setup move, after which the solver plays
moves 1, 3, 5, ... and the opponent's replies 2, 4, ... are forced from the line. The solver must
find every one of its moves. As on Lichess, a solver move that differs from the line but gives
checkmate solves the puzzle (so mate themes accept any mating move).
"""
from __future__ import annotations

import csv
import dataclasses
import time
from pathlib import Path

import chess

from arena.agents.agent import Agent, Limit
from arena.suites.common import new_position, select
from arena.suites.report import ItemResult

BAND_WIDTH = 400  # rating bands: 400-799, 800-1199, 1200-1599, ... (small runs need wide bands)


@dataclasses.dataclass(frozen=True)
class Puzzle:
    id: str
    fen: str  # before the setup move
    moves: tuple[str, ...]  # UCI: setup move, then solver / opponent alternately
    rating: int
    themes: tuple[str, ...] = ()


def rating_band(rating: int, width: int = BAND_WIDTH) -> str:
    """'1200-1599' for 1375 with width 400."""
    lo = rating // width * width
    return f"{lo}-{lo + width - 1}"


def read_puzzles(path: str | Path, limit: int | None = None) -> list[Puzzle]:
    """The first `limit` puzzles of a Lichess CSV (columns FEN, Moves, Rating; PuzzleId and Themes
    optional). The files are in PuzzleId order, and ids are random, so a prefix is a fair sample."""
    path = Path(path)
    out: list[Puzzle] = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = {"FEN", "Moves", "Rating"} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"puzzle file {path}: missing column(s) {', '.join(sorted(missing))}")
        for n, row in enumerate(reader, start=2):
            moves = tuple(row["Moves"].split())
            if len(moves) < 2:
                raise ValueError(f"puzzle file {path} line {n}: Moves needs a setup move and a "
                                 "solver move")
            out.append(Puzzle(row.get("PuzzleId") or f"line{n}", row["FEN"], moves,
                              int(row["Rating"]), tuple((row.get("Themes") or "").split())))
            if limit is not None and len(out) >= limit:
                break
    return out


def solve_puzzle(agent: Agent, puzzle: Puzzle, move_limit: Limit | None = None) -> ItemResult:
    """Plays the puzzle's line with `agent`; solved when it finds every solver move (or mates)."""
    board = chess.Board(puzzle.fen)
    board.push_uci(puzzle.moves[0])
    new_position(agent)
    played, nodes, start = [], 0, time.perf_counter()

    def result(solved: bool, error: str | None = None) -> ItemResult:
        return ItemResult(puzzle.id, solved, tuple(played), nodes=nodes,
                          seconds=time.perf_counter() - start, error=error)

    for i in range(1, len(puzzle.moves), 2):
        move, info = select(agent, board, move_limit)
        nodes += int(info.get("nodes") or 0)
        played.append(move.uci())
        if not board.is_legal(move):
            return result(False, f"illegal move {move.uci()}")
        board.push(move)
        if move.uci() != puzzle.moves[i]:
            return result(board.is_checkmate())  # an alternative mate counts, anything else fails
        if i + 1 < len(puzzle.moves):
            board.push_uci(puzzle.moves[i + 1])
    return result(True)
