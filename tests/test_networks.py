"""The networks that ship in networks/: each loads (its parameters' sha256 checked) and plays legal
moves through uci.py, as a fresh clone's user would run it: from the start, a mate in one, a
stalemate trap and a position with one legal move."""
from __future__ import annotations

import sys
from pathlib import Path

import chess
import chess.engine
import pytest

from models import network_dir

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted(p.parent for p in (ROOT / "networks").glob("*/network.yaml"))


def test_a_network_ships():
    assert SHIPPED, "networks/ holds no network directory"


MATE_IN_ONE = ("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", "a1a8")  # the back rank
STALEMATE_TRAP = "7k/8/6Q1/8/8/8/8/K7 w - - 0 1"  # Qf7 (and three king moves) stalemate; Qg7+ and Qe8+ do not
ONE_MOVE = ("4R2k/8/5K2/8/8/8/8/8 b - - 0 1", "h8h7")  # in check, one square to go to


@pytest.mark.parametrize("net_dir", SHIPPED, ids=lambda p: p.name)
def test_a_shipped_network_loads_and_plays_legal_moves_through_uci(net_dir):
    network = network_dir.load(net_dir)  # raises on a changed byte (sha256) or a config that does not fit
    assert network.game == "chess" and (net_dir / "README.md").is_file()  # and its model card
    engine = chess.engine.SimpleEngine.popen_uci(
        [sys.executable, str(ROOT / "uci.py"), "--agent", f"mcts:net={net_dir.relative_to(ROOT)}"], cwd=ROOT,
        timeout=120)  # python-chess waits 10 s for uciok: a loaded 2-core machine can take longer to start
    nodes = chess.engine.Limit(nodes=32)  # one budget throughout: each distinct one compiles a search
    try:
        board = chess.Board()
        for _ in range(6):
            move = engine.play(board, nodes).move
            assert move in board.legal_moves
            board.push(move)
        # its own search, as a GUI would run it on these positions: the mate found, a legal move
        # beside a stalemate trap, the only move when there is one
        fen, mate = MATE_IN_ONE
        assert engine.play(chess.Board(fen), nodes).move.uci() == mate
        trap = chess.Board(STALEMATE_TRAP)
        assert engine.play(trap, nodes).move in trap.legal_moves
        fen, only = ONE_MOVE
        assert engine.play(chess.Board(fen), nodes).move.uci() == only
    finally:
        engine.quit()
