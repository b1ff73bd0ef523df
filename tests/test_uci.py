"""uci.py as a real UCI engine: python-chess drives it through a game; fuzzing never kills it."""
import math
import random
import subprocess
import sys
import time
from pathlib import Path

import chess
import chess.engine
import pytest

from arena import Agent, make_agent
from arena.play.uci import UciEngine, UciError, info_line, parse_go, parse_position, time_budget
from games.winprob import WIN_PROB_SLOPE, cp_from_value, value_from_cp

ROOT = Path(__file__).resolve().parent.parent
UCI = [sys.executable, str(ROOT / "uci.py")]


def test_python_chess_drives_uci_py_through_a_game_against_stockfish():
    ours = chess.engine.SimpleEngine.popen_uci(UCI + ["--agent", "random:seed=7"], cwd=ROOT)
    stockfish = make_agent("stockfish:skill=0,nodes=200")
    try:
        assert ours.id["name"].startswith("zerochess")
        board = chess.Board()
        limits = [chess.engine.Limit(time=0.05), chess.engine.Limit(nodes=10),
                  chess.engine.Limit(white_clock=30, black_clock=30, white_inc=0.1, black_inc=0.1)]
        while not board.is_game_over(claim_draw=True) and len(board.move_stack) < 300:
            if board.turn == chess.WHITE:
                result = ours.play(board, limits[len(board.move_stack) // 2 % 3],
                                   info=chess.engine.INFO_ALL)
                assert result.move in board.legal_moves
                assert result.info.get("pv", [result.move])[0] == result.move
                board.push(result.move)
            else:
                board.push(stockfish.select(board)[0])
        assert board.is_game_over(claim_draw=True) or len(board.move_stack) == 300
        ours.ping()  # still alive and answering isready
    finally:
        ours.quit()
        stockfish.close()


_VOCAB = ["uci", "isready", "ucinewgame", "position", "startpos", "fen", "moves", "go", "stop",
          "setoption", "name", "value", "Hash", "Simulations", "wtime", "btime", "winc", "binc",
          "movetime", "nodes", "depth", "infinite", "movestogo", "searchmoves", "ponder",
          "ponderhit", "debug", "on", "register", "e2e4", "e7e5", "e2e5", "a7a8q", "0000", "-1",
          "0", "99999999999999999999", "1e9", "nan", "8/8/8/8/8/8/8/8", "w", "b", "KQkq", "-",
          "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR", "\x00", "ü", "\t", "go!", "__init__",
          "_cmd_quit", "info", "bestmove"]


def _fuzz_lines(n, rng):
    lines = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.6:
            words = [rng.choice(_VOCAB) for _ in range(rng.randint(1, 8))]
        elif kind < 0.8:  # a real command with a broken tail
            words = [rng.choice(["position", "go", "setoption", "position fen"]),
                     *(rng.choice(_VOCAB) for _ in range(rng.randint(0, 10)))]
        else:  # printable and control-character noise
            words = ["".join(chr(rng.randint(1, 0x2FF)) for _ in range(rng.randint(1, 30)))]
        line = " ".join(words).replace("\n", " ").replace("\r", " ")
        if line.split() and line.split()[0] == "quit":
            line = "x" + line
        lines.append(line)
    return lines


def test_ten_thousand_malformed_lines_never_crash_it():
    lines = _fuzz_lines(10_000, random.Random(1234))
    data = ("\n".join(lines) + "\nstop\nisready\nquit\n").encode("utf-8", "surrogatepass")
    data = data.replace(b"\x01", b"\xff\xfe")  # some bytes that are not UTF-8 at all
    proc = subprocess.run(UCI + ["--agent", "random"], input=data, capture_output=True,
                          timeout=120, cwd=ROOT)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert "Traceback" not in proc.stderr.decode()
    assert out.rstrip().splitlines()[-1] == "readyok"  # alive after all of it
    assert out.count("info string error") > 1000


class _Slow(Agent):
    """Thinks until stopped (or 5 s) so the test can see stop and isready mid-search."""
    name = "slow"

    def select(self, board, limit=None, stop=None):
        stop.wait(5)
        return next(iter(board.legal_moves)), {"nodes": 42, "value": 0.5}


def test_go_infinite_runs_in_a_thread_until_stop():
    out = []
    engine = UciEngine(_Slow(), out.append)
    engine.handle("position startpos moves e2e4")
    engine.handle("go infinite")
    time.sleep(0.05)
    engine.handle("isready")
    assert out == ["readyok"]  # answered during the search; no bestmove yet
    t0 = time.perf_counter()
    engine.handle("stop")
    assert time.perf_counter() - t0 < 4
    assert out[-1].startswith("bestmove ") and chess.Move.from_uci(out[-1].split()[1]) in \
        parse_position(["startpos", "moves", "e2e4"]).legal_moves
    info = next(line for line in out if line.startswith("info depth"))
    assert f"score cp {cp_from_value(0.5)}" in info and "nodes 42" in info
    assert engine.handle("quit") is False


def test_protocol_replies_and_errors():
    out = []
    engine = UciEngine(make_agent("random:seed=1"), out.append)
    for line in ["uci", "isready", "position startpos moves e2e4 e7e5 g1f3", "go nodes 5", "stop",
                 "position fen 8/8/8/8 w - - 0 1", "position startpos moves e2e4 e2e4",
                 "go movetime abc", "setoption name Hash value 16", "flurb", "position", ""]:
        assert engine.handle(line) is True
    assert out[:4] == ["id name zerochess (random:seed=1)", "id author zerochess authors", "uciok", "readyok"]
    assert any(line.startswith("bestmove ") for line in out)
    errors = [line for line in out if line.startswith("info string error")]
    assert len(errors) == 6
    assert "bad FEN" in errors[0] and "illegal move 'e2e4'" in errors[1]
    assert "'movetime' needs an integer" in errors[2] and "option 'Hash' is not supported" in errors[3]
    assert "unknown command 'flurb'" in errors[4]
    # The failed commands left the last good position in place.
    assert [m.uci() for m in engine.board.move_stack] == ["e2e4", "e7e5", "g1f3"]
    engine.handle("position startpos")
    engine.handle("go")
    engine.handle("stop")
    assert out[-1].split()[1] in {m.uci() for m in chess.Board().legal_moves}
    engine.handle("position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")  # stalemate: no move to give
    engine.handle("go")
    engine.handle("stop")
    assert out[-1] == "bestmove (none)"


def test_time_manager_and_go_parsing():
    assert time_budget(60_000) == pytest.approx(3.0)  # 1/20 of the remaining time
    assert time_budget(60_000, 2_000) == pytest.approx(4.0)  # plus half the increment
    assert time_budget(10_000, movestogo=5) == pytest.approx(2.0)
    assert time_budget(100, 1_000) == pytest.approx(0.07)  # never beyond the clock minus 30 ms
    limit, _ = parse_go("wtime 60000 btime 1000 winc 0 binc 0".split(), chess.WHITE)
    assert limit.movetime == pytest.approx(3.0)
    limit, _ = parse_go("wtime 60000 btime 1000".split(), chess.BLACK)
    assert limit.movetime == pytest.approx(0.05)
    assert parse_go(["nodes", "800"], chess.WHITE)[0].nodes == 800
    assert parse_go(["infinite"], chess.WHITE)[0].infinite
    _, notes = parse_go(["depth", "5"], chess.WHITE)
    assert notes and "depth" in notes[0]
    for bad in (["nodes"], ["nodes", "x"], ["bogus"], ["movetime", "-5"], ["searchmoves", "e2e4"]):
        with pytest.raises(UciError):
            parse_go(bad, chess.WHITE)


def test_centipawns_invert_the_win_probability_formula():
    for cp in (-800, -150, 0, 35, 300, 1200):
        # win% = 50% * 2 / (1 + exp(-0.00368208 cp)); value = 2 win - 1
        win = 1 / (1 + math.exp(-0.00368208 * cp))
        assert cp_from_value(2 * win - 1) == pytest.approx(cp, abs=1)
        assert value_from_cp(cp) == pytest.approx(2 * win - 1)
    assert WIN_PROB_SLOPE == 0.00368208
    assert cp_from_value(1.0) > 10_000 and cp_from_value(-1.0) < -10_000
    line = info_line({"nodes": 100, "value": 0.0, "pv": [chess.Move.from_uci("e2e4")]}, 0.5)
    assert line == "info depth 1 nodes 100 nps 200 time 500 score cp 0 pv e2e4"


def test_bad_agent_spec_is_one_line_and_status_2(tmp_path):
    proc = subprocess.run(UCI + ["--agent", f"mcts:net={tmp_path}/none"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "network directory" in proc.stderr


def test_engine_agents_forward_their_own_options():
    out = []
    with make_agent("stockfish:skill=0,nodes=100") as agent:
        engine = UciEngine(agent, out.append)
        engine.handle("uci")
        assert "option name Hash type spin default 16 min 1 max 33554432" in out
        engine.handle("setoption name Hash value 32")
        assert not any("error" in line for line in out)
        engine.handle("setoption name Hash value lots")
        engine.handle("setoption name MultiPV value 3")  # python-chess manages MultiPV itself
        assert sum("error" in line for line in out) == 2
        engine.handle("position startpos")
        engine.handle("go nodes 100")
        engine.handle("stop")
        assert out[-1].startswith("bestmove ") and "score cp" in out[-2]
