"""Boards from PGN games, and the samplers that pick which boards to annotate.

`unique` (the paper's sampler) keeps each FEN once, at its first occurrence; `weighted` keeps the same
boards but remembers how often each occurred (`count`), so training can sample the natural
distribution. Boards with no legal move (mate, stalemate) are skipped: they have no move to value.
"""
from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Iterable, Iterator

import chess
import chess.pgn


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


def sample_boards(paths: Iterable[str | Path], sampler: str = "unique", seed: int = 0,
                  max_boards: int | None = None) -> list[GameBoard]:
    """Boards of all games, games in a seeded random order (so a `max_boards` prefix spans many
    games), each FEN once. `sampler`: "unique" (count=1) or "weighted" (count = occurrences)."""
    if sampler not in ("unique", "weighted"):
        raise ValueError(f"unknown sampler {sampler!r} (use 'unique' or 'weighted')")
    games = list(read_games(paths))
    random.Random(seed).shuffle(games)
    seen: dict[str, GameBoard] = {}
    for game_id, game in games:
        for gb in game_boards(game_id, game):
            if gb.fen in seen:
                seen[gb.fen].count += 1
            elif max_boards is None or len(seen) < max_boards:
                seen[gb.fen] = gb
    out = list(seen.values())
    if sampler == "unique":
        for gb in out:
            gb.count = 1
    return out
