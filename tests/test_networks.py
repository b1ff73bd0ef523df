"""The networks that ship in networks/: each loads (its parameters' sha256 checked) and plays legal
moves through uci.py, as a fresh clone's user would run it."""
from __future__ import annotations

import sys
from pathlib import Path

import chess
import chess.engine
import pytest

from models import checkpoint

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted(p.parent for p in (ROOT / "networks").glob("*/network.yaml"))


def test_a_network_ships():
    assert SHIPPED, "networks/ holds no network directory"


@pytest.mark.parametrize("net_dir", SHIPPED, ids=lambda p: p.name)
def test_a_shipped_network_loads_and_plays_legal_moves_through_uci(net_dir):
    network = checkpoint.load(net_dir)  # raises on a changed byte (sha256) or a config that does not fit
    assert network.game == "chess" and (net_dir / "README.md").is_file()  # and its model card
    engine = chess.engine.SimpleEngine.popen_uci(
        [sys.executable, str(ROOT / "uci.py"), "--agent", f"mcts:net={net_dir.relative_to(ROOT)}"], cwd=ROOT)
    try:
        board = chess.Board()
        for _ in range(6):
            move = engine.play(board, chess.engine.Limit(nodes=8)).move
            assert move in board.legal_moves
            board.push(move)
    finally:
        engine.quit()
