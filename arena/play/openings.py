"""Opening books: EPD positions or PGN lines, in random or file order, each played with both colours.

An `Opening` is a start FEN plus the book moves leading from it (PGN lines keep their moves, so
the game's PGN and a network's history planes see them; EPD books start from the position).
A `Book` keeps raw entries and parses only the openings a match uses, so a 40,000-line book opens
in a fraction of a second.
"""
from __future__ import annotations

import dataclasses
import io
import random
import re
from pathlib import Path

import chess
import chess.pgn


@dataclasses.dataclass(frozen=True)
class Opening:
    """A start position and the book moves played from it."""

    fen: str  # root position (chess.STARTING_FEN for PGN lines from the initial position)
    moves: tuple[str, ...]  # book moves in UCI from `fen`
    name: str = ""  # e.g. ECO code, or file:line

    def board(self) -> chess.Board:
        """The position after the book moves, with them on the move stack."""
        board = chess.Board(self.fen)
        for uci in self.moves:
            board.push_uci(uci)
        return board


START = Opening(chess.STARTING_FEN, (), "startpos")


def parse_epd(line: str, where: str) -> Opening:
    """EPD, or a full FEN (books like 2moves_v1.epd keep the two move counters)."""
    parts = line.split()
    try:
        if len(parts) >= 6 and parts[4].isdigit() and parts[5].rstrip(";").isdigit():
            board, ops = chess.Board(" ".join(parts[:5] + [parts[5].rstrip(";")])), {}
        else:
            board, ops = chess.Board.from_epd(line)
    except ValueError as e:
        raise ValueError(f"{where}: bad EPD line: {e}") from None
    if not board.is_valid():
        raise ValueError(f"{where}: illegal position {board.fen()}")
    return Opening(board.fen(), (), str(ops.get("id", where)))


def _parse_pgn(text: str, where: str) -> Opening:
    game = chess.pgn.read_game(io.StringIO(text))
    if game is None or game.errors:
        raise ValueError(f"{where}: bad PGN: {game.errors[0] if game else 'empty'}")
    name = game.headers.get("ECO") or game.headers.get("Eco") or game.headers.get("Opening") or where
    return Opening(game.board().fen(), tuple(m.uci() for m in game.mainline_moves()), name)


def _parse_tsv(line: str, where: str) -> Opening:
    """lichess-org/chess-openings rows: eco, name, pgn."""
    eco, name, pgn = (line.split("\t") + ["", "", ""])[:3]
    opening = _parse_pgn(pgn, where)
    return dataclasses.replace(opening, name=f"{eco} {name}".strip() or where)


class Book:
    """Openings of one file, parsed on access: `book[i]` -> Opening, `len(book)`."""

    def __init__(self, path: str | Path, limit: int | None = None):
        path = self.path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"opening book {path} not found")
        suffix = path.suffix.lower()
        text = path.read_text()
        if suffix == ".epd":
            lines = [(n, l.strip()) for n, l in enumerate(text.splitlines(), 1)]
            self._entries = [(f"{path.name}:{n}", l) for n, l in lines if l and not l.startswith("#")]
            self._parse = parse_epd
        elif suffix == ".pgn":
            chunks = re.split(r"\n\s*\n(?=\s*\[)", text.strip())
            self._entries = [(f"{path.name}#{i + 1}", c) for i, c in enumerate(chunks) if c.strip()]
            self._parse = _parse_pgn
        elif suffix == ".tsv":
            lines = text.splitlines()[1:]  # header: eco name pgn
            self._entries = [(f"{path.name}:{n + 2}", l) for n, l in enumerate(lines) if l.strip()]
            self._parse = _parse_tsv
        else:
            raise ValueError(f"opening book {path}: expected .epd, .pgn or .tsv")
        if limit is not None:
            self._entries = self._entries[:limit]
        if not self._entries:
            raise ValueError(f"opening book {path} has no openings")

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, index: int) -> Opening:
        where, raw = self._entries[index]
        return self._parse(raw, where)


def book_path(book: str | Path) -> Path:
    """A book file: `book` itself if it exists, else that name under openings/ of the shared data
    (e.g. '2moves_v1.epd'; FileNotFoundError naming both places and the download command)."""
    if Path(book).exists():
        return Path(book)
    from runtime import data_file
    try:
        return data_file("openings", str(book))
    except FileNotFoundError as e:
        raise FileNotFoundError(f"opening book '{book}' is not a file, and {e}") from None


def book_files(book: str | Path) -> list[Path]:
    """The book files `book` names (book_path): the file itself, or a folder's .pgn and .tsv files
    in name order (e.g. lichess_chess_openings/{a..e}.tsv)."""
    path = book_path(book)
    if not path.is_dir():
        return [path]
    return sorted(f for f in path.iterdir() if f.suffix.lower() in (".pgn", ".tsv"))


def load_book(path: str | Path, limit: int | None = None) -> list[Opening]:
    """Every opening of a book file, parsed (errors name the file and line or game)."""
    book = Book(path, limit)
    return [book[i] for i in range(len(book))]


def pick(book, count: int, order: str = "random", seed: int = 0, start: int = 0) -> list[Opening]:
    """`count` openings of a Book (or list): "sequential" from index `start` (wrapping), or
    "random" (seeded; no repeats until the book is used up). Lines whose book moves already end the
    game (lichess's ECO "Fool's Mate" rows, a stalemate) are passed over: a game from them is decided
    before either agent moves, half a point each over both colours whatever their strength."""
    if order not in ("random", "sequential"):
        raise ValueError(f"opening order '{order}': expected random or sequential")
    finished: set[int] = set()

    def playable(index: int) -> Opening | None:
        """book[index] (parsed once), or None for a line that ends the game."""
        opening = None if index in finished else book[index]
        if opening is not None and opening_is_over(opening):
            finished.add(index)
            if len(finished) == len(book):
                raise ValueError(f"opening book {getattr(book, 'path', '')}: every line ends the game "
                                 "(mate or stalemate) before either side moves; use another book")
            opening = None
        return opening

    if order == "sequential":
        chosen, i = [], start
        while len(chosen) < count:
            opening = playable(i % len(book))
            if opening is not None:
                chosen.append(opening)
            i += 1
        return chosen
    rng = random.Random(seed)
    chosen = []
    while len(chosen) < count:
        indices = rng.sample(range(len(book)), min(len(book), count - len(chosen)))
        chosen.extend(o for o in map(playable, indices) if o is not None)
    return chosen


def opening_is_over(opening: Opening) -> bool:
    """The book moves end the game (checkmate, stalemate, insufficient material)."""
    return opening.board().is_game_over(claim_draw=False)
