"""FEN <-> 77 tokens, the searchless-chess board encoding (Ruoss et al. 2024, appendix A.1).

Layout of the 77 tokens (one character each, '.' pads):
  [0]      side to move ('w' or 'b')
  [1:65]   the 64 squares in FEN order (a8..h8, a7..h7, ..., a1..h1), '.' for empty
  [65:69]  castling rights as in the FEN, padded with '.' to 4 ('-' -> '....')
  [69:71]  en-passant square ('-' -> '..')
  [71:74]  halfmove clock, left-aligned, padded with '.' to 3
  [74:77]  fullmove number, left-aligned, padded with '.' to 3
This is the layout of the paper's released tokenizer (77 = 1 + 64 + 4 + 2 + 3 + 3): the
halfmove clock gets 3 characters (it can reach 100 and more), not 2. The character vocabulary
is the paper's 31 characters; 'b' serves as black bishop, file b and black to move.
"""
from __future__ import annotations

from typing import Iterable

import chess
import numpy as np

SEQUENCE_LENGTH = 77
CHARACTERS = tuple("0123456789abcdefghpnrkqPBNRQKw.")  # the paper's order
CHARACTER_TO_TOKEN = {char: index for index, char in enumerate(CHARACTERS)}
VOCAB_SIZE = len(CHARACTERS)  # 31
_EMPTY = CHARACTER_TO_TOKEN["."]
_BOARD = slice(1, 65)


def tokenize(fen: str) -> np.ndarray:
    """FEN (6 fields) -> tokens [77] uint8. ValueError naming the FEN if it is not one."""
    fields = fen.split(" ") if isinstance(fen, str) else []
    if len(fields) != 6:
        raise ValueError(f"bad FEN {fen!r}: expected 6 space-separated fields")
    placement, side, castling, en_passant, halfmove, fullmove = fields
    try:
        chess.Board(fen)  # validates placement, side, castling and en passant syntax
    except ValueError as err:
        raise ValueError(f"bad FEN {fen!r}: {err}") from None
    if not (halfmove.isdigit() and len(halfmove) <= 3 and fullmove.isdigit() and len(fullmove) <= 3):
        raise ValueError(f"bad FEN {fen!r}: move counters must be 1-3 digits")
    chars = [side]
    for char in placement.replace("/", ""):
        chars += ["."] * int(char) if char.isdigit() else [char]
    chars += list(castling.replace("-", "").ljust(4, "."))
    chars += list(en_passant.replace("-", "").ljust(2, "."))
    chars += list(halfmove.ljust(3, ".")) + list(fullmove.ljust(3, "."))
    return np.array([CHARACTER_TO_TOKEN[c] for c in chars], np.uint8)


def tokenize_batch(fens: Iterable[str]) -> np.ndarray:
    """FENs -> tokens [B, 77] uint8."""
    rows = [tokenize(fen) for fen in fens]
    return np.stack(rows) if rows else np.zeros((0, SEQUENCE_LENGTH), np.uint8)


def detokenize(tokens) -> str:
    """Tokens [77] -> the FEN they encode. ValueError if they encode none."""
    tokens = np.asarray(tokens)
    if tokens.shape != (SEQUENCE_LENGTH,) or tokens.min() < 0 or tokens.max() >= VOCAB_SIZE:
        raise ValueError(f"expected {SEQUENCE_LENGTH} tokens in [0, {VOCAB_SIZE}), got shape {tokens.shape}")
    chars = "".join(CHARACTERS[t] for t in tokens.tolist())
    rows = []
    for rank in range(8):
        row, empty = "", 0
        for char in chars[_BOARD][rank * 8:(rank + 1) * 8]:
            if char == ".":
                empty += 1
                continue
            row += (str(empty) if empty else "") + char
            empty = 0
        rows.append(row + (str(empty) if empty else ""))
    field = lambda part: part.rstrip(".")  # noqa: E731
    fen = " ".join(["/".join(rows), chars[0], field(chars[65:69]) or "-", field(chars[69:71]) or "-",
                    field(chars[71:74]), field(chars[74:77])])
    try:
        chess.Board(fen)
    except ValueError as err:
        raise ValueError(f"tokens do not encode a FEN ({fen!r}): {err}") from None
    if not (field(chars[71:74]).isdigit() and field(chars[74:77]).isdigit()):
        raise ValueError(f"tokens do not encode a FEN ({fen!r}): bad move counters")
    return fen
