"""Stockfish annotation: a value for every legal move, resumable without repeats (tiny node limit)."""
import collections

import chess
import pytest

from distill import annotate, boards, records
from runtime import find_stockfish

FENS = [
    chess.STARTING_FEN,
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",  # Ra8# mates in one
    "8/8/8/8/8/5k2/8/4K2q w - - 0 1",  # white in check, one legal move
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",  # castling both ways
]


def _boards():
    return [boards.GameBoard(game=f"t#{i}", ply=0, fen=f) for i, f in enumerate(FENS)]


@pytest.fixture(scope="module")
def stockfish():
    try:
        return find_stockfish()
    except FileNotFoundError as e:
        pytest.fail(f"Stockfish is required for these tests ({e}); run 'make stockfish'")


def test_every_legal_move_gets_a_value_and_mate_is_found(tmp_path, stockfish):
    out = annotate.annotate(_boards(), tmp_path, nodes_per_move=20, show_progress=False)
    assert out["new"] == len(FENS)
    store = records.RecordStore(tmp_path)
    by_fen = {store[i]["fen"]: store[i] for i in range(len(store))}
    assert set(by_fen) == set(FENS)
    for fen, rec in by_fen.items():
        legal = {m.uci() for m in chess.Board(fen).legal_moves}
        assert sorted(rec["moves"]) == sorted(legal)
        assert all(0.0 <= v <= 1.0 for v in rec["values"])
        assert rec["value"] == max(rec["values"])
    mate = by_fen[FENS[2]]
    assert dict(zip(mate["moves"], mate["values"]))["a1a8"] == 1.0


def test_resume_after_interruption_never_repeats(tmp_path, stockfish, capsys):
    first = annotate.annotate(_boards(), tmp_path, nodes_per_move=20, max_new=2, show_progress=False)
    assert first["new"] == 2
    # a kill mid-write leaves a torn record; the resumed run trims it and continues
    with open(records.shard_paths(tmp_path)[-1], "ab") as f:
        f.write(b"\x87\xa3fen\xa5rnbqk")
    capsys.readouterr()
    second = annotate.annotate(_boards(), tmp_path, nodes_per_move=20)  # stdout is not a terminal here
    assert second == {**second, "new": len(FENS) - 2, "skipped": 2}
    n = len(FENS) - 2  # a plain line at the last board (and every PLAIN_EVERY), not a live bar
    assert f"annotate: {n}/{n} new boards (2 done before)" in capsys.readouterr().out
    fens = [r["fen"] for r in records.iter_records(tmp_path)]
    assert collections.Counter(fens) == collections.Counter(FENS)
    third = annotate.annotate(_boards(), tmp_path, nodes_per_move=20, show_progress=False)
    assert third["new"] == 0 and len(records.RecordStore(tmp_path)) == len(FENS)


def test_parallel_workers_and_bad_engine(tmp_path, stockfish):
    out = annotate.annotate(_boards()[:3], tmp_path, nodes_per_move=10, workers=2,
                            show_progress=False)
    assert out["new"] == 3 and len(records.RecordStore(tmp_path)) == 3
    with pytest.raises(FileNotFoundError, match="Stockfish not found"):
        annotate.annotate(_boards(), tmp_path / "x", engine_path="/nonexistent/sf", nodes_per_move=10)
    with pytest.raises(ValueError, match="nodes_per_move or time_per_move"):
        annotate.annotate(_boards(), tmp_path / "y")


@pytest.mark.slow
def test_sigterm_stops_annotation_keeping_boards_and_leaving_no_engine(tmp_path, stockfish):
    """`kill` of a background annotate (SIGINT ignored, as `nohup ... &` from a script): exit 130,
    the boards written are kept, no Stockfish or worker process is left behind."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "rec"
    proc = subprocess.Popen(
        [sys.executable, str(root / "distill.py"), "annotate", "--config", str(root / "configs/distill_cpu.yaml"),
         "--set", f"annotate.out_dir={out}", "annotate.workers=2", "annotate.nodes_per_move=200", "annotate.max_boards=2000",
         "annotate.pgn=[games/lichess_100_games_with_evals.pgn]", "annotate.positions=[]"],
        cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: (os.setsid(), signal.signal(signal.SIGINT, signal.SIG_IGN)))
    deadline = time.time() + 120
    while time.time() < deadline and not (out.exists() and len(list(records.iter_records(out))) >= 3):
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err, err
    left = ["?"]
    for _ in range(40):  # the workers, their engines and multiprocessing's tracker exit within seconds
        left = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout.split()
        if not left:
            break
        time.sleep(0.5)
    assert not left, subprocess.run(["ps", "-o", "pid,cmd", "-g", str(proc.pid)], capture_output=True,
                                    text=True).stdout
    kept = len(list(records.iter_records(out)))
    assert kept >= 3
    assert len(records.RecordStore(out)) == kept  # the index rebuilds over every board written


def test_values_are_stockfishs_own_scores_on_the_lichess_curve(tmp_path, stockfish):
    """Each move's value is what Stockfish itself reports for it (its multipv line, the same
    deterministic one-thread search), from the mover's side, through the published Lichess curve
    written out here: 1 / (1 + exp(-0.00368208 cp)), mates 1 or 0. Catches a flipped side, a white-
    relative score, another curve or a value given to the wrong move."""
    import math

    import chess.engine
    fens = [FENS[1], FENS[2], "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"]
    out_dir = tmp_path / "a"
    annotate.annotate([boards.GameBoard(game=f"s#{i}", ply=0, fen=f) for i, f in enumerate(fens)], out_dir,
                      nodes_per_move=50, show_progress=False)
    store = records.RecordStore(out_dir)
    annotated = {store[i]["fen"]: dict(zip(store[i]["moves"], store[i]["values"])) for i in range(len(store))}
    engine = chess.engine.SimpleEngine.popen_uci(stockfish)
    try:
        engine.configure({"Threads": 1, "Hash": 16})
        for fen in fens:
            board = chess.Board(fen)
            n = board.legal_moves.count()
            infos = engine.analyse(board, chess.engine.Limit(nodes=50 * n), multipv=n, game=object())
            reported = {}
            for info in infos:
                score = info["score"].pov(board.turn)
                reported[info["pv"][0].uci()] = (float(score.mate() > 0) if score.is_mate()
                                                 else 1 / (1 + math.exp(-0.00368208 * score.score())))
            assert len(reported) >= n - 1, fen  # every move, or all but a rare one scored apart
            for move, value in reported.items():
                assert annotated[fen][move] == pytest.approx(value, abs=1e-9), (fen, move)
        assert annotated[FENS[2]]["a1a8"] == 1.0
        best = max(annotated[fens[2]], key=annotated[fens[2]].get)
        assert best == "h5f7"  # Scholar's mate: Stockfish's own mate score puts it first
    finally:
        engine.quit()
