"""Opening books (EPD with and without move counters, PGN lines, lichess TSV) and their order."""
import chess
import pytest

from arena.play.openings import Book, load_book, pick
from runtime.data import data_file


def test_epd_with_full_fen_and_with_opcodes(tmp_path):
    book = tmp_path / "b.epd"
    book.write_text("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1\n"
                    "\n# a comment\n"
                    '4k3/8/8/8/8/8/8/4K2R w K - hmvc 3; fmvn 40; id "endgame";\n')
    openings = load_book(book)
    assert len(openings) == 2
    assert openings[0].board().fen() == chess.Board(
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1").fen()
    assert openings[1].name == "endgame" and openings[1].board().fullmove_number == 40
    assert openings[1].board().halfmove_clock == 3


def test_bad_books_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.epd"
    bad.write_text("8/8/8/8/8/8/8/8 w - - 0 1\nnot a fen\n")
    book = Book(bad)
    with pytest.raises(ValueError, match="bad.epd:1: illegal position"):
        book[0]
    with pytest.raises(ValueError, match="bad.epd:2: bad EPD line"):
        book[1]
    with pytest.raises(FileNotFoundError, match="opening book .*missing.epd not found"):
        Book(tmp_path / "missing.epd")
    (tmp_path / "b.txt").write_text("x")
    with pytest.raises(ValueError, match="expected .epd, .pgn or .tsv"):
        Book(tmp_path / "b.txt")
    (tmp_path / "empty.pgn").write_text("")
    with pytest.raises(ValueError, match="no openings"):
        Book(tmp_path / "empty.pgn")


def test_shared_books_parse():
    pgn = Book(data_file("openings", "8moves_v3.pgn"))
    assert len(pgn) == 34700
    first = pgn[0]
    assert len(first.moves) == 16 and first.name == "A07"
    board = first.board()
    assert len(board.move_stack) == 16 and board.root() == chess.Board()
    # The derived EPD holds exactly the final positions of the PGN lines.
    epd = Book(data_file("openings", "8moves_v3_final_positions.epd"))
    assert epd[0].board().board_fen() == board.board_fen() and not epd[0].moves
    two = Book(data_file("openings", "2moves_v1.epd"))
    assert len(two) == 40457 and two[0].board().fullmove_number == 3
    tsv = Book(data_file("openings", "lichess_chess_openings", "a.tsv"))
    assert tsv[0].name.startswith("A00") and tsv[0].moves == ("g1h3",)


def test_pick_orders(tmp_path):
    book = tmp_path / "b.epd"
    fens = [b.fen() for b in _boards(5)]
    book.write_text("\n".join(fens) + "\n")
    b = Book(book)
    seq = pick(b, 7, "sequential", start=3)
    assert [o.fen for o in seq] == [fens[i % 5] for i in range(3, 10)]
    rnd = pick(b, 5, "random", seed=1)
    assert sorted(o.fen for o in rnd) == sorted(fens)  # no repeats before the book is used up
    assert [o.fen for o in pick(b, 5, "random", seed=1)] == [o.fen for o in rnd]
    assert len(pick(b, 12, "random", seed=2)) == 12
    with pytest.raises(ValueError, match="opening order"):
        pick(b, 1, "shuffled")


def test_pick_passes_over_lines_that_end_the_game(tmp_path):
    """lichess's a.tsv holds Fool's Mate (1. f3 e5 2. g4 Qh4#): no match game may start mated."""
    fools_mate = "A00\tBarnes Opening: Fool's Mate\t1. f3 e5 2. g4 Qh4#"
    rows = ["eco\tname\tpgn", "A00\tAmar Opening\t1. Nh3", fools_mate, "B00\tKing's Pawn\t1. e4"]
    (tmp_path / "b.tsv").write_text("\n".join(rows) + "\n")
    book = Book(tmp_path / "b.tsv")
    assert book[1].board().is_checkmate()  # the line itself parses
    for order in ("sequential", "random"):
        picked = pick(book, 6, order, seed=3)
        assert len(picked) == 6 and not any(o.board().is_game_over() for o in picked)
        assert {o.moves for o in picked} == {("g1h3",), ("e2e4",)}
    assert [o.moves for o in pick(book, 3, "sequential", start=1)] == [("e2e4",), ("g1h3",), ("e2e4",)]
    real = Book(data_file("openings", "lichess_chess_openings", "a.tsv"))
    assert not any(o.board().is_game_over() for o in pick(real, len(real), "sequential"))
    (tmp_path / "mated.tsv").write_text("\n".join([rows[0], fools_mate]) + "\n")
    with pytest.raises(ValueError, match="every line ends the game"):
        pick(Book(tmp_path / "mated.tsv"), 2)


def _boards(n):
    board, out = chess.Board(), []
    for move in ("e2e4", "e7e5", "g1f3", "b8c6", "f1b5")[:n]:
        board.push_uci(move)
        out.append(board.copy(stack=False))
    return out
