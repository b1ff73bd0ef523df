"""Shared by the student tests: a tiny student config and four boards (the start, a middlegame, a
promotion, a back-rank mate in one: Ra8)."""
import chess

from distill.config import StudentConfig

TINY = StudentConfig(num_bins=16, embedding_dim=16, num_layers=1, num_heads=2, widening_factor=2)
BOARDS = [
    chess.Board(),
    chess.Board("r3k2r/pppq1ppp/2n2n2/3pp3/1b1PP3/2N2N2/PPPQ1PPP/R3KB1R b KQkq - 3 8"),
    chess.Board("8/4P1k1/8/8/8/8/5K2/8 w - - 0 1"),  # promotions
    chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"),
]
