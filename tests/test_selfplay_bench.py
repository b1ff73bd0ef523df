"""bench/selfplay.py: one JSON object on stdout, and each phase's figures on stderr as it ends."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_phases_stream_to_stderr_and_stdout_holds_one_object():
    r = subprocess.run([sys.executable, str(ROOT / "bench/selfplay.py"), "--config", str(ROOT / "configs/tic_tac_toe.yaml"),
                        "--plies", "2", "--train-steps", "1", "--set", "actors.games_per_actor=4",
                        "search.num_simulations=4"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    final = json.loads(r.stdout)
    phases = [json.loads(line) for line in r.stderr.splitlines() if line.startswith('{"config"')]
    assert [sorted(p) for p in phases[:2]] == [["compile_and_warmup_s", "config"], ["config", "ply_s", "positions_per_s"]]
    assert {p["config"] for p in phases} == {"tic_tac_toe"}
    assert phases[-1] == {"config": "tic_tac_toe", **final["tic_tac_toe"]}
    assert phases[1]["positions_per_s"] == final["tic_tac_toe"]["positions_per_s"] > 0
