"""Boards from PGN games, EPD position files (opening books) and Lichess puzzle CSVs, and the samplers
that pick which boards to annotate.

Each source is cut into units that train/test splits keep whole: a PGN game, one EPD position, one
puzzle (its start and every board along its solution line).

`unique` (the paper's sampler) keeps each FEN once, at its first occurrence; `weighted` keeps the same
boards but remembers how often each occurred (`count`), so training can sample the natural
distribution. Boards with no legal move (mate, stalemate) are skipped: they have no move to value.
"""
from __future__ import annotations

import csv
import dataclasses
import random
from pathlib import Path
from typing import Iterable, Iterator

import chess
import chess.pgn

from arena import parse_epd  # EPD or full-FEN lines, as match.py's books read them


@dataclasses.dataclass
class GameBoard:
    """One board of one game: what gets annotated."""

    game: str  # game id "<file name>#<index in file>" (train/test split is by this id)
    ply: int  # half-moves played since the game's start position
    fen: str  # the board, full FEN (with clocks: what the 77-token student sees)
    count: int = 1  # occurrences among all boards read (weighted sampler)


def read_games(paths: Iterable[str | Path]) -> Iterator[tuple[str, chess.pgn.Game]]:
    """Yields (game id, game) for every game of every PGN file, in file order."""
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"PGN file {path} not found")
        with open(path, encoding="utf-8", errors="replace") as f:
            index = 0
            while True:
                game = chess.pgn.read_game(f)
                if game is None:
                    break
                if game.errors:
                    raise ValueError(f"{path} game {index}: unreadable PGN ({game.errors[0]})")
                yield f"{path.name}#{index}", game
                index += 1


def game_boards(game_id: str, game: chess.pgn.Game) -> Iterator[GameBoard]:
    """Every board of a game (before each move, and the final one) that has a legal move."""
    board = game.board()
    ply = 0
    for move in game.mainline_moves():
        yield GameBoard(game_id, ply, board.fen())
        board.push(move)
        ply += 1
    if any(True for _ in board.legal_moves):
        yield GameBoard(game_id, ply, board.fen())


def epd_boards(path: str | Path) -> Iterator[tuple[str, list[GameBoard]]]:
    """(unit id, [board]) for every position of an EPD file (an opening book: FEN and opcodes)."""
    path = Path(path)
    with open(path, encoding="utf-8", errors="replace") as f:
        for index, line in enumerate(f):
            if not line.strip():
                continue
            board = chess.Board(parse_epd(line.strip(), f"{path} line {index + 1}").fen)
            if any(True for _ in board.legal_moves):
                unit = f"{path.name}#{index}"
                yield unit, [GameBoard(unit, 0, board.fen())]


def puzzle_boards(path: str | Path, exclude_ids: frozenset[str] = frozenset()
                  ) -> Iterator[tuple[str, list[GameBoard]]]:
    """(unit id, boards) for every Lichess puzzle (CSV: PuzzleId, FEN, Moves, ...) not in
    `exclude_ids`: the board after the opponent's first move and every board along the solution."""
    path = Path(path)
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        missing = {"PuzzleId", "FEN", "Moves"} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path}: not a Lichess puzzle CSV (no {', '.join(sorted(missing))} column)")
        for row in reader:
            if row["PuzzleId"] in exclude_ids:
                continue
            unit = f"{path.name}#{row['PuzzleId']}"
            try:
                board = chess.Board(row["FEN"])
                moves = [chess.Move.from_uci(m) for m in row["Moves"].split()]
                board.push(moves[0])  # the opponent's move that sets the puzzle
                out = []
                for ply, move in enumerate(moves[1:]):
                    out.append(GameBoard(unit, ply, board.fen()))
                    board.push(move)
            except (ValueError, IndexError, AssertionError) as e:
                raise ValueError(f"{path} puzzle {row['PuzzleId']}: unreadable ({e})") from None
            yield unit, out


def puzzle_ids(path: str | Path) -> frozenset[str]:
    """The PuzzleIds of a Lichess puzzle CSV (to keep an evaluation set out of the training data)."""
    from arena import read_puzzles  # here: arena.suites imports jax, annotate's workers need not
    return frozenset(p.id for p in read_puzzles(path))


def read_units(paths: Iterable[str | Path], exclude_puzzles: frozenset[str] = frozenset()
               ) -> Iterator[tuple[str, list[GameBoard]]]:
    """(unit id, boards) of every source, by suffix: .pgn games, .epd positions, .csv puzzles."""
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"board source {path} not found")
        suffix = path.suffix.lower()
        if suffix == ".pgn":
            for game_id, game in read_games([path]):
                yield game_id, list(game_boards(game_id, game))
        elif suffix == ".epd":
            yield from epd_boards(path)
        elif suffix == ".csv":
            yield from puzzle_boards(path, exclude_puzzles)
        else:
            raise ValueError(f"board source {path}: unknown kind (use .pgn games, .epd positions or "
                             ".csv Lichess puzzles)")


def sample_boards(paths: Iterable[str | Path], sampler: str = "unique", seed: int = 0,
                  max_boards: int | None = None, exclude_puzzles: frozenset[str] = frozenset()
                  ) -> list[GameBoard]:
    """Boards of all sources (PGN games, EPD positions, puzzle lines), units in a seeded random
    order (so a `max_boards` prefix spans many games and every source), each FEN once.
    `sampler`: "unique" (count=1) or "weighted" (count = occurrences). Puzzles whose id is in
    `exclude_puzzles` (an evaluation set) are left out."""
    if sampler not in ("unique", "weighted"):
        raise ValueError(f"unknown sampler {sampler!r} (use 'unique' or 'weighted')")
    units = list(read_units(paths, exclude_puzzles))
    random.Random(seed).shuffle(units)
    seen: dict[str, GameBoard] = {}
    for _, unit_boards in units:
        for gb in unit_boards:
            if gb.fen in seen:
                seen[gb.fen].count += 1
            elif max_boards is None or len(seen) < max_boards:
                seen[gb.fen] = gb
    out = list(seen.values())
    if sampler == "unique":
        for gb in out:
            gb.count = 1
    return out
