"""Successor boards: the positions one move after an annotated board, valued by that move's value
(distill/warm_start.py), checked against pgx's observations and python-chess's legal moves."""
from __future__ import annotations

import chess
import numpy as np
import pytest

import games
from distill.records import RecordStore, ShardWriter
from distill.warm_start import concat, load_boards, successor_boards
from games.chess_bridge import fen_to_state, uci_to_pgx_action


def _after(fen: str, move: str) -> str:
    board = chess.Board(fen)
    board.push_uci(move)
    return board.fen()


def test_successor_boards_are_value_only_boards_valued_by_the_move_values(tmp_path):
    """Every move's successor (per_board = all): valued 1 - its win probability for the new side to
    move, its observation pgx's own for that FEN, its legal moves python-chess's, no policy target; a
    move that ends the game (here a1a8 mates) is skipped. Fewer per board: a uniform draw without
    replacement, the same for the same seed."""
    fen = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"
    board = chess.Board(fen)
    moves = [m.uci() for m in board.legal_moves]
    values = [0.1 if m == "a1a2" else (1.0 if m == "a1a8" else 0.5) for m in moves]
    with ShardWriter(tmp_path / "rec") as w:
        w.write({"fen": fen, "game": "g#0", "ply": 0, "moves": moves, "values": values, "value": 1.0})
    store = RecordStore(tmp_path / "rec")
    width = games.make("chess").spec.max_legal_actions
    kids = successor_boards(store, [0], width, per_board=len(moves))
    assert len(kids) == len(moves) - 1  # no board after the mate
    assert not kids.policy.any()
    seen = set()
    for row in range(len(kids)):
        match = [m for m in moves if m != "a1a8" and np.array_equal(
            kids.observation[row], np.asarray(fen_to_state(_after(fen, m)).observation, np.float16))]
        assert len(match) == 1
        m = match[0]
        seen.add(m)
        assert kids.z[row] == pytest.approx(2 * (1 - values[moves.index(m)]) - 1)  # 0.8 after a1a2, else 0
        child = chess.Board(_after(fen, m))
        legal = {uci_to_pgx_action(c.uci(), child.turn == chess.WHITE) for c in child.legal_moves}
        assert set(kids.legal_actions[row][kids.legal_actions[row] >= 0].tolist()) == legal
    assert seen == set(moves) - {"a1a8"}
    two = successor_boards(store, [0], width, per_board=2, seed=3)
    assert len(two) in (1, 2) and np.array_equal(two.z, successor_boards(store, [0], width, 2, seed=3).z)
    both = concat(load_boards(store, [0], width, 0.0), two)
    assert len(both) == 1 + len(two) and both.policy[0].sum() == 1.0 and not both.policy[1:].any()
    # at a halfmove clock of 99 every quiet move reaches pgx's 50-move draw (python-chess plays on):
    # no successor is kept, and a split with none is one line
    fifty = "8/8/4k3/8/8/3K4/8/7R w - - 99 80"
    quiet = [m.uci() for m in chess.Board(fifty).legal_moves]
    with ShardWriter(tmp_path / "fifty") as w:
        w.write({"fen": fifty, "game": "g#1", "ply": 0, "moves": quiet, "values": [0.9] * len(quiet), "value": 0.9})
    with pytest.raises(ValueError, match="no successor boards"):
        successor_boards(RecordStore(tmp_path / "fifty"), [0], width, per_board=len(quiet))


def _after(fen: str, move: str) -> str:
    board = chess.Board(fen)
    board.push_uci(move)
    return board.fen()
