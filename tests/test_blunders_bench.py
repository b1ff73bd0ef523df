"""bench/blunders.py against a game whose one blunder is known: the queen given for a pawn."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PGN = """[White "tester"]
[Black "other"]
[Result "0-1"]

1. e4 e5 2. Qh5 Nc6 3. Qxe5+ Nxe5 0-1

[White "someone"]
[Black "else"]
[Result "1-0"]

1. e4 f6 2. d4 g5 3. Qh5# 1-0
"""


def _bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "bench/blunders.py"), *args], capture_output=True, text=True,
                          timeout=120)


def test_the_queen_for_a_pawn_is_the_one_blunder_and_a_capture_punishes_it(tmp_path):
    (tmp_path / "games.pgn").write_text(PGN)
    run = _bench(str(tmp_path / "games.pgn"), "--player", "tester", "--depth", "8")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert (out["games"], out["moves"], out["blunders"], out["answered_by_capture"]) == (1, 3, 1, 1)
    first = out["first"][0]
    assert (first["move"], first["reply"], first["capture"]) == ("h5e5", "c6e5", True)
    assert first["before"] - first["after"] >= 600  # a queen for a pawn


def test_a_player_in_no_game_and_a_missing_file_are_one_line(tmp_path):
    (tmp_path / "games.pgn").write_text(PGN)
    run = _bench(str(tmp_path / "games.pgn"), "--player", "nobody")
    assert run.returncode != 0 and "no game" in run.stderr and "Traceback" not in run.stderr
    run = _bench(str(tmp_path / "missing.pgn"), "--player", "tester")
    assert run.returncode != 0 and "not found" in run.stderr and "Traceback" not in run.stderr
