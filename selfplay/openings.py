"""Opening lines for self-play (`actors.opening_book`): a chess book's lines as pgx action ids.

    lines = book_lines("lichess_chess_openings", "chess")  # int32 [plies] arrays; a book file or a folder
    actor = SelfPlayActor(..., opening_lines=lines)        # each game starts on a random line

The actor plays a line's moves as the first plies of a game (each position still searched and its
policy target kept), so a game record still replays from the initial position: its PGN, the replay
corpus and the history planes see the book moves. Only lines from the initial position qualify (PGN
and TSV books, or a folder of them; an EPD book holds positions, not lines); a PGN's games from set-up
positions are left out with a note. A PGN of whole games with `actors.opening_book_prefix=random`
starts games at positions of real play.
"""
from __future__ import annotations

import sys

import chess
import numpy as np


def book_lines(book: str, game_name: str) -> tuple[np.ndarray, ...]:
    """Every line of `book` as int32 [plies] pgx action ids; ValueError naming the problem and the fix."""
    if game_name != "chess":
        raise ValueError(f"actors.opening_book is for chess (this run plays {game_name}); "
                         f"use actors.random_opening_plies for opening variety")
    files = _resolve(book)
    if not files:
        raise ValueError(f"actors.opening_book: {book} holds no .pgn or .tsv book")
    lines, set_up = [], []
    for file in files:
        file_lines, file_set_up = _lines_of(file)
        lines.extend(file_lines)
        set_up.extend(file_set_up)
    if not lines:  # an EPD book, or games that all start from set-up positions
        name, fen = set_up[0]
        raise ValueError(f"actors.opening_book: {name} starts from {fen}, not the initial position; "
                         f"self-play needs move lines (a PGN or TSV book such as lichess_chess_openings/c.tsv)")
    if set_up:  # a few set-up games in a PGN of real games (lichess's "From Position") are left out
        print(f"actors.opening_book: {len(set_up)} of {len(lines) + len(set_up)} lines start from a "
              f"set-up position and are left out", file=sys.stderr)
    return tuple(lines)


def _resolve(book: str):
    from arena import book_files
    try:
        return book_files(book)
    except FileNotFoundError as e:
        raise ValueError(f"actors.opening_book: {e}") from None


def _lines_of(file) -> tuple[list[np.ndarray], list[tuple[str, str]]]:
    """The lines of one book file from the initial position, and (name, FEN) of each other one."""
    from arena import Book
    from games import chess_bridge

    try:
        openings = Book(file)
    except (OSError, ValueError) as e:  # an unknown suffix, an empty book
        raise ValueError(f"actors.opening_book: {e}") from None
    lines, set_up = [], []
    for i in range(len(openings)):
        opening = openings[i]  # parsed here: a bad line names its file and line
        if opening.fen != chess.STARTING_FEN:
            set_up.append((opening.name, opening.fen))
            continue
        white_to_move = np.arange(len(opening.moves)) % 2 == 0
        lines.append(chess_bridge.ucis_to_pgx_actions(opening.moves, white_to_move))
    return lines, set_up
