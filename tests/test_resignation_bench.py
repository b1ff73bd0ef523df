"""bench/resignation.py on a run whose never-resign games are built by hand: the resign scores rebuilt
from the records (the searched moves' Q, the root value), the false positives at the run's threshold
agreeing with the actors' own verdicts, and the one-line refusal of a directory that is not a run."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from replay_records import make_record

from replay.chunks import ChunkWriter

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 5  # moves per position in make_record


def _game(game_id: str, values, rewards, would_resign: int, searched_q: float = 0.0, disabled: bool = True):
    """A 4-ply game whose root values are `values`, every move's Q 0 (not searched) but the first's,
    `searched_q` (0: that one not searched either); players 0, 1, 0, 1 to move."""
    record = make_record(game_id, plies=4, seed=len(game_id))
    record.root_value = np.asarray(values, np.float32)
    record.child_q = np.zeros(4 * WIDTH, np.float32)
    record.child_q[::WIDTH] = searched_q
    record.rewards = np.asarray(rewards, np.float32)
    record.resign_disabled, record.resign_would_have = disabled, would_resign
    if not disabled:
        record.termination = "resign"
    return record


def _bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "bench/resignation.py"), *args], capture_output=True, text=True,
                          timeout=120)


def test_false_positives_rebuilt_from_the_records(tmp_path):
    run = tmp_path / "run"
    (run / "replay").mkdir(parents=True)
    (run / "config.yaml").write_text("game: tic_tac_toe\nname: run\nactors: {resign_threshold: -0.9}\n")
    writer = ChunkWriter(run / "replay")
    for record in [
        _game("a", [0.5, -0.95, 0.1, -0.97], [1, -1], would_resign=1),  # player 1 would resign at ply 1, and lost
        _game("bb", [-0.92, 0, 0, 0], [0, 0], would_resign=0),  # player 0 at ply 0, and drew: a false positive
        _game("ccc", [0.2] * 4, [1, -1], would_resign=-1),  # nobody
        _game("dddd", [-0.95] * 4, [1, -1], would_resign=-1, searched_q=-0.5),  # a searched move at -0.5 holds
        _game("eeeee", [-0.95] * 4, [1, -1], would_resign=-1, disabled=False),  # resigned: not measured
    ]:
        writer.append(record)
    out = _bench(str(run), "--png", str(tmp_path / "r.png"))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert (report["games"], report["resigned_games"], report["never_resign_games"]) == (5, 1, 4)
    at_run = report["run_threshold"]
    assert (at_run["threshold"], at_run["would_resign"], at_run["false_positives"]) == (-0.9, 2, 1)
    assert (report["actors_would_resign"], report["actors_false_positives"]) == (2, 1)  # the actors agree
    below = {c["threshold"]: c for c in report["candidates"]}[-0.95]  # only game a's -0.97 is below -0.95
    assert (below["would_resign"], below["false_positives"]) == (1, 0)
    assert report["tuner"]["path"] == [[4, -0.9]]  # 4 games: too few to move it
    assert (tmp_path / "r.png").stat().st_size > 10_000


def test_a_directory_that_is_not_a_run_is_one_line(tmp_path):
    out = _bench(str(tmp_path))
    assert out.returncode != 0 and "not a run directory" in out.stderr and "Traceback" not in out.stderr
