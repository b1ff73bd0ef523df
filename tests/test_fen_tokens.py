"""FEN -> 77 searchless-chess tokens and back, on edge cases and real positions."""
import csv
import itertools

import chess
import numpy as np
import pytest

from games import fen_tokens
from runtime.data import data_file


def _chars(tokens):
    return "".join(fen_tokens.CHARACTERS[t] for t in tokens)


def test_start_position_tokens_by_hand():
    expected = ("w" + "rnbqkbnr" + "pppppppp" + "." * 32 + "PPPPPPPP" + "RNBQKBNR"
                + "KQkq" + ".." + "0.." + "1..")
    tokens = fen_tokens.tokenize(chess.STARTING_FEN)
    assert tokens.shape == (77,) and tokens.dtype == np.uint8
    assert _chars(tokens) == expected
    assert fen_tokens.detokenize(tokens) == chess.STARTING_FEN


def test_vocabulary_is_the_papers_31_characters():
    assert fen_tokens.VOCAB_SIZE == 31
    assert "".join(fen_tokens.CHARACTERS) == "0123456789abcdefghpnrkqPBNRQKw."


@pytest.mark.parametrize("subset", ["".join(c) for n in range(5) for c in itertools.combinations("KQkq", n)])
def test_every_castling_subset(subset):
    fen = f"r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w {subset or '-'} - 0 1"
    assert chess.Board(fen).fen() == fen  # a real position whose rights python-chess keeps
    tokens = fen_tokens.tokenize(fen)
    assert tokens.shape == (77,)
    assert _chars(tokens)[65:69] == subset.ljust(4, ".")
    assert fen_tokens.detokenize(tokens) == fen


@pytest.mark.parametrize("fen, ep", [
    ("rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 3", "e3"),
    ("rnbqkbnr/pppp1ppp/8/3Pp3/8/8/PPP1PPPP/RNBQKBNR w KQkq e6 0 3", "e6"),
    ("4k3/8/8/8/Pp6/8/8/4K3 b - a3 0 40", "a3"),
])
def test_en_passant(fen, ep):
    assert chess.Board(fen).fen() == fen  # the capture is legal, so python-chess writes it too
    tokens = fen_tokens.tokenize(fen)
    assert _chars(tokens)[69:71] == ep
    assert fen_tokens.detokenize(tokens) == fen


@pytest.mark.parametrize("halfmove, fullmove", [(0, 1), (9, 10), (10, 99), (47, 123), (99, 100), (100, 999)])
def test_clocks_and_move_numbers(halfmove, fullmove):
    fen = f"8/5k2/8/8/8/2K5/8/7R b - - {halfmove} {fullmove}"
    chars = _chars(fen_tokens.tokenize(fen))
    assert len(chars) == 77
    assert chars[71:74] == str(halfmove).ljust(3, ".") and chars[74:77] == str(fullmove).ljust(3, ".")
    assert chars[0] == "b" and chars[1:65].count(".") == 61
    assert fen_tokens.detokenize(fen_tokens.tokenize(fen)) == fen


def test_puzzle_positions_round_trip():
    with open(data_file("puzzles", "lichess_puzzles_themed.csv"), newline="") as f:
        fens = [chess.Board(row["FEN"]).fen() for row in itertools.islice(csv.DictReader(f), 2000)]
    tokens = fen_tokens.tokenize_batch(fens)
    assert tokens.shape == (len(fens), 77)
    assert [fen_tokens.detokenize(t) for t in tokens] == fens
    assert len({t.tobytes() for t in tokens}) == len(set(fens))  # distinct positions, distinct tokens


@pytest.mark.parametrize("fen", [
    "not a fen",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0",  # 5 fields
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",  # bad side
    "rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",  # 9 squares
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1000",  # 4-digit move number
])
def test_bad_fen_is_a_value_error_naming_it(fen):
    with pytest.raises(ValueError, match="bad FEN"):
        fen_tokens.tokenize(fen)


def test_bad_tokens_are_a_value_error():
    with pytest.raises(ValueError):
        fen_tokens.detokenize(np.zeros(76, np.uint8))
    tokens = fen_tokens.tokenize(chess.STARTING_FEN)
    tokens[0] = fen_tokens.CHARACTER_TO_TOKEN["K"]  # side to move 'K'
    with pytest.raises(ValueError, match="do not encode a FEN"):
        fen_tokens.detokenize(tokens)
