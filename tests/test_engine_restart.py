"""Stockfish dying: killed mid-move in a match game or mid-board in `distill.py annotate`,
the engine is restarted and the move / board retried once, then reported. The processes are really
killed (SIGKILL to the engine's pid while it searches or before it is asked)."""
from __future__ import annotations

import io
import os
import signal
import threading
import time

import chess
import chess.pgn
import pytest

from arena import EngineDiedError
from arena.agents.agent import Agent, Limit
from arena.agents.random import RandomAgent
from arena.agents.spec import make_agent
from arena.play.game import Adjudication, play_game
from arena.play.openings import Opening
from distill import annotate, boards, records
from distill import engine as engine_lib
from runtime import find_stockfish


@pytest.fixture(scope="module", autouse=True)
def stockfish():
    try:
        return find_stockfish()
    except FileNotFoundError as e:
        pytest.fail(f"Stockfish is required for these tests ({e}); run 'make stockfish'")


def _kill_later(pid: int, after: float = 0.3) -> threading.Timer:
    timer = threading.Timer(after, os.kill, (pid, signal.SIGKILL))
    timer.start()
    return timer


class _KillDuringMove(Agent):
    """Passes moves to a Stockfish agent; on move `at` its engine is killed 0.3 s into a 1.5 s search
    (`twice`: the restarted engine too, 0.3 s into the retry)."""

    def __init__(self, inner, at: int, twice: bool = False):
        self.inner, self.at, self.twice, self.name, self.calls = inner, at, twice, inner.name, 0

    def select(self, board, limit=None, stop=None):
        self.calls += 1
        if self.calls != self.at:
            return self.inner.select(board, limit)
        first = self.inner.pid()
        _kill_later(first)
        if self.twice:
            def kill_the_restarted():
                while self.inner.pid() == first:
                    time.sleep(0.01)
                _kill_later(self.inner.pid()).join()
            threading.Thread(target=kill_the_restarted, daemon=True).start()
        return self.inner.select(board, Limit(movetime=1.5))

    def reset(self, game=None):
        self.inner.reset(game)


def test_stockfish_killed_mid_move_is_restarted_and_the_game_goes_on():
    sf = make_agent("stockfish:nodes=200,name=sf")
    try:
        first = sf.pid()
        game = play_game(_KillDuringMove(sf, at=3), RandomAgent(seed=1), Opening(chess.STARTING_FEN, ()),
                         Adjudication(max_plies=16))
        assert sf.restarts == 1 and sf.pid() != first
        assert not game.termination.startswith("error"), game.termination
        # every move was played: the PGN replays legally to the cap, or to a finish by the rules,
        # past the killed search (Stockfish's third move: ply 5)
        moves = list(chess.pgn.read_game(io.StringIO(game.pgn)).mainline_moves())
        board = chess.Board()
        for move in moves:
            assert move in board.legal_moves
            board.push(move)
        assert len(moves) == game.plies >= 5
        assert (game.plies, game.termination) == (16, "max plies") or board.is_game_over(claim_draw=True)
    finally:
        sf.close()


def test_stockfish_dying_twice_on_a_move_is_reported_and_the_agent_recovers():
    sf = make_agent("stockfish:nodes=200,name=sf")
    try:
        game = play_game(_KillDuringMove(sf, at=2, twice=True), RandomAgent(seed=1),
                         Opening(chess.STARTING_FEN, ()), Adjudication(max_plies=16))
        assert game.termination.startswith("error: sf: EngineDiedError: engine sf died twice on"), game.termination
        assert game.result == "0-1" and sf.restarts == 2
        move, _ = sf.select(chess.Board())  # the next game has a working engine
        assert move in chess.Board().legal_moves
        with pytest.raises(EngineDiedError):  # and select itself raises it
            _KillDuringMove(sf, at=1, twice=True).select(chess.Board())
    finally:
        sf.close()


FENS = [
    chess.STARTING_FEN,
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
]


def _boards():
    return [boards.GameBoard(game=f"t#{i}", ply=0, fen=f) for i, f in enumerate(FENS)]


def _killing_move_values(monkeypatch, kill_on: dict[str, int]):
    """distill's move_values, but the engine process is SIGKILLed before it is asked about a FEN in
    `kill_on` (that many times)."""
    real = engine_lib.move_values

    def move_values(engine, board, *args):
        if kill_on.get(board.fen(), 0) > 0:
            kill_on[board.fen()] -= 1
            os.kill(engine.pid, signal.SIGKILL)
            time.sleep(0.2)
        return real(engine, board, *args)

    monkeypatch.setattr(engine_lib, "move_values", move_values)


def test_stockfish_killed_mid_annotation_is_restarted_and_the_board_retried(tmp_path, monkeypatch, capsys):
    _killing_move_values(monkeypatch, {FENS[1]: 1})
    out = annotate.annotate(_boards(), tmp_path, nodes_per_move=20, show_progress=False)
    assert out["new"] == len(FENS) and out["engine_restarts"] == 1 and out["failed"] == 0
    assert sorted(r["fen"] for r in records.iter_records(tmp_path)) == sorted(FENS)
    assert "Stockfish died on " + FENS[1] in capsys.readouterr().err


def test_a_board_stockfish_dies_on_twice_is_skipped_and_reported(tmp_path, monkeypatch, capsys):
    _killing_move_values(monkeypatch, {FENS[2]: 2})
    out = annotate.annotate(_boards(), tmp_path, nodes_per_move=20, show_progress=False)
    assert out["new"] == len(FENS) - 1 and out["engine_restarts"] == 2
    assert out["failed"] == 1 and out["failed_fens"] == [FENS[2]]
    assert FENS[2] not in {r["fen"] for r in records.iter_records(tmp_path)}
    assert "1 board(s) skipped" in capsys.readouterr().err
    again = annotate.annotate(_boards(), tmp_path, nodes_per_move=20, show_progress=False)  # a rerun retries it
    assert again["new"] == 1 and again["failed"] == 0
