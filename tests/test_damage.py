"""Runs that survive damage: a damaged replay chunk on --resume, a config that differs
from the run's, a self-play actor killed with -9. Checkpoint fallback: tests/test_learner.py; chunk
scanning: tests/test_replay.py; Stockfish dying: tests/test_engine_restart.py."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgpack
import psutil
import pytest
from test_replay import make_record

from configs.loader import load
from replay import chunks
from replay.buffer import ReplayBuffer
from replay.record import encode
from selfplay.config import SelfPlayConfig

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def _selfplay(tmp_path, name: str, *args: str) -> list[str]:
    return [sys.executable, str(ROOT / "selfplay.py"), "--config", str(ROOT / "configs/tic_tac_toe.yaml"),
            "--no-progress", "--set", f"runs_dir={tmp_path}", "--set", f"name={name}",
            "--set", "ray_num_cpus=1", "--set", "actors.num_cpus=1", "--set", "evaluation.enabled=false", *args]


def _run_with_games(tmp_path, name: str, games: int = 200, per_chunk: int = 100, checkpoints=()) -> Path:
    """A run directory as a stopped run leaves it (config.yaml, replay chunks, orbax checkpoints of the
    untrained network at the steps `checkpoints`) with `games` synthetic tic-tac-toe games of 5 plies."""
    from selfplay.prepare import prepare_run_dir
    cfg = load(SelfPlayConfig, ROOT / "configs/tic_tac_toe.yaml", [f"runs_dir={tmp_path}", f"name={name}"])
    run_dir = prepare_run_dir(cfg, resume=False)
    buf = ReplayBuffer(run_dir / "replay", cfg.replay.__class__(games_per_chunk=per_chunk), 9, 9)
    for i in range(games):
        buf.add(encode(make_record(f"g{i}", 5, seed=i)))
    buf.close()
    if checkpoints:
        import jax
        import jax.numpy as jnp

        import games as games_lib
        import models
        from learner.checkpoint import Checkpointer
        from learner.train import init_train_state
        game = games_lib.make(cfg.game)
        obs = game.observe(game.init(jax.random.split(jax.random.PRNGKey(0), 1)))
        state = init_train_state(models.make_network(cfg.network, game.spec), cfg.learner, obs, jax.random.PRNGKey(0))
        ckpt = Checkpointer(run_dir / "checkpoints", cfg.learner.keep_checkpoints)
        for step in checkpoints:
            ckpt.save(state._replace(step=jnp.asarray(step, state.step.dtype)),
                      {"samples_trained": step * cfg.learner.batch_size, "games_total": games,
                       "positions_total": 5 * games, "seconds_total": 0.0})
        ckpt.close()
    return run_dir


def _error_lines(stderr: str) -> list[str]:
    """selfplay.py's own lines (Ray's start-up log lines and JAX's fork warning aside); no traceback."""
    assert "Traceback" not in stderr, stderr[-3000:]
    return [line for line in stderr.splitlines() if line.startswith("selfplay.py:")]


def _flip_middle_frame(path: Path) -> None:
    """16 bytes flipped in the middle of the chunk's middle frame."""
    unpacker = msgpack.Unpacker(open(path, "rb"), raw=False)
    offsets = [0] + [unpacker.tell() for _ in unpacker]
    mid = (len(offsets) - 1) // 2  # frame `mid` spans offsets[mid]:offsets[mid + 1]
    at = (offsets[mid] + offsets[mid + 1]) // 2
    data = bytearray(path.read_bytes())
    for i in range(at, at + 16):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.slow
def test_damaged_chunk_and_checkpoint_on_resume_are_set_aside_and_the_run_continues(tmp_path):
    """A chunk with 16 bytes flipped in its middle frame, and an unreadable newest checkpoint."""
    run_dir = _run_with_games(tmp_path, "dmg", checkpoints=(1, 2))
    first = chunks.chunk_paths(run_dir / "replay")[0]
    _flip_middle_frame(first)
    damaged = first.read_bytes()
    (run_dir / "checkpoints" / "2" / "state" / "_METADATA").write_text("garbage")

    # --set replay.strict=true: the run stops on damage, as one line (no Ray traceback), exit 2
    strict = subprocess.run(_selfplay(tmp_path, "dmg", "--resume", "--set", "replay.strict=true"), cwd=ROOT,
                            env=ENV, capture_output=True, text=True, timeout=120)
    assert strict.returncode == 2, strict.stderr[-2000:]
    lines = _error_lines(strict.stderr)
    assert len(lines) == 1 and "chunk-000000.msgpack: frame 50" in lines[0] and "replay.strict" in lines[0], lines
    assert first.read_bytes() == damaged and not (run_dir / "replay" / "quarantine").exists()
    # the checkpoint is restored before the replay is read: its fallback came first, with one warning
    warnings = [line for line in strict.stderr.splitlines() if line.startswith("checkpoint step")]
    assert len(warnings) == 1 and "checkpoint step 2 is unreadable" in warnings[0], strict.stderr[-3000:]
    assert "restored step 1 instead" in warnings[0] and (run_dir / "checkpoints" / "unreadable-2").is_dir()

    # default: the chunk moves to replay/quarantine/, its 99 intact games are kept, the run goes on
    result = subprocess.run(_selfplay(tmp_path, "dmg", "--resume", "--set", "learner.max_steps=3"), cwd=ROOT,
                            env=ENV, capture_output=True, text=True, timeout=170)
    assert result.returncode == 0, result.stderr[-3000:]
    notes = [line for line in result.stderr.splitlines() if line.startswith("replay:")]
    assert len(notes) == 1 and "1 damaged game(s) set aside" in notes[0], result.stderr[-3000:]
    assert str(run_dir / "replay" / "quarantine") in notes[0]
    summary = json.loads((run_dir / "summary.json").read_text())  # written whatever stdout shows
    assert summary["games_quarantined"] == 1 and summary["reloaded_games"] == 199
    assert summary["step"] == 3 and summary["actor_restarts"] == 0
    assert summary["samples_trained"] == 3 * 128  # 128 from checkpoint 1, then 2 steps of 128
    assert (run_dir / "replay" / "quarantine" / first.name).read_bytes() == damaged
    kept = [r.game_id for r in chunks.read_chunk(first)]
    assert kept == [f"g{i}" for i in range(100) if i != 50]
    assert "Traceback" not in result.stderr


def test_config_mismatch_on_resume_is_one_line_exit_2(tmp_path):
    _run_with_games(tmp_path, "mismatch", games=3)
    r = subprocess.run(_selfplay(tmp_path, "mismatch", "--resume", "--set", "network.resnet.filters=16"),
                       cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "config mismatch on --resume: network.resnet.filters is 32 in the run, 16 now" \
        in lines[0], r.stderr
    assert "another name" in lines[0]


def test_resume_of_a_run_that_set_a_retired_option_names_it(tmp_path):
    """A run's config.yaml names every field of its day: a retired option at its old default resumes;
    set to anything else (the run was made with it) the resume is one line naming the key, before any
    checkpoint is read."""
    import yaml

    from configs.loader import to_dict
    from selfplay.errors import RunError
    from selfplay.prepare import check_resumable
    cfg = load(SelfPlayConfig, None, ["game=connect_four"])
    saved = to_dict(cfg)
    saved["network"]["resnet"]["opponent_policy_head"] = False
    saved["search"]["prior_temperature"] = 1.0
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(saved, sort_keys=False))
    check_resumable(tmp_path, cfg)  # the old defaults resume
    saved["network"]["resnet"]["opponent_policy_head"] = True
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(saved, sort_keys=False))
    with pytest.raises(RunError, match=r"config\.yaml: network\.resnet\.opponent_policy_head was retired"):
        check_resumable(tmp_path, cfg)


def test_unwritable_runs_dir_is_one_line_exit_2(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    r = subprocess.run(_selfplay(tmp_path / "file", "x"), cwd=ROOT, env=ENV, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Not a directory" in lines[0] and "runs_dir" in lines[0], r.stderr


def test_disk_full_and_damaged_files_are_one_line_with_the_fix():
    import errno

    from replay.record import RecordError, SchemaError
    from selfplay.prepare import start_error_line
    full = start_error_line(OSError(errno.ENOSPC, "No space left on device", "runs/x/replay/chunk-000003.msgpack"))
    assert "no space left" in full and "chunk-000003" in full and "runs_dir" in full
    assert "move that file" in start_error_line(RecordError("runs/x/replay/chunk-000001.msgpack: frame 2: ..."))
    assert "with the code that wrote it" in start_error_line(SchemaError("chunk-000001.msgpack: frame 0: schema 9"))
    assert start_error_line(KeyError("a bug")) is None  # not a start error: raised as it is


def _descendants_titled(pid: int, title: str) -> list[psutil.Process]:
    found = []
    for p in psutil.Process(pid).children(recursive=True):
        try:
            if " ".join(p.cmdline()).startswith(title):
                found.append(p)
        except psutil.Error:
            pass
    return found


def _game_ids(run_dir: Path) -> list[str]:
    try:
        return [r.game_id for r in chunks.read_all(run_dir / "replay")]
    except FileNotFoundError:  # a chunk file appearing while listed
        return []


@pytest.mark.slow
def test_kill_dash_nine_of_a_selfplay_actor_is_restarted_and_counted(tmp_path):
    """kill -9 of the self-play actor's worker mid-run: Ray restarts it, its games keep arriving (a new
    start id in their game ids), no finished game is lost, and the summary counts 1 restart."""
    run_dir = tmp_path / "kill_actor"
    out_path, err_path = tmp_path / "stdout", tmp_path / "stderr"
    with open(out_path, "w") as out, open(err_path, "w") as err:  # files: a full pipe would block the run
        proc = subprocess.Popen(_selfplay(tmp_path, "kill_actor", "--set", "learner.max_steps=100000",
                                          "--set", "actors.games_per_actor=16"),
                                cwd=ROOT, env=ENV, stdout=out, stderr=err, start_new_session=True)
    try:
        deadline = time.monotonic() + 150
        while len(_game_ids(run_dir)) < 16:  # the actor's first life finished games
            assert proc.poll() is None, err_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "no games in time"
            time.sleep(1)
        (actor,) = _descendants_titled(proc.pid, "ray::SelfPlayActor")
        before = _game_ids(run_dir)
        actor.kill()  # kill -9 of the actor's worker process
        actor.wait(10)
        sessions = {g.split("-a")[0] for g in before}
        while True:  # games from the restarted actor (a new start id) arrive
            after = _game_ids(run_dir)
            if any(g.split("-a")[0] not in sessions for g in after):
                break
            assert proc.poll() is None, err_path.read_text()[-3000:]
            assert time.monotonic() < deadline + 60, "no games from the restarted actor in time"
            time.sleep(1)
        (restarted,) = _descendants_titled(proc.pid, "ray::SelfPlayActor")
        assert restarted.pid != actor.pid
        proc.terminate()  # SIGTERM to the driver: checkpoint, summary (SIGINT may be ignored under a background CI)
        proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err = err_path.read_text()
    assert proc.returncode == 0, err[-3000:]
    assert str(run_dir / "network") in out_path.read_text()  # the lines for a person name the network
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["actor_restarts"] == 1, summary
    assert "self-play actor 0 died and Ray restarted it (1 restart(s))" in err
    final = _game_ids(run_dir)
    assert final[: len(before)] == before  # every game finished before the kill is still there
    assert summary["games_total"] == len(final) > len(before)


@pytest.mark.slow
def test_damaged_network_directory_is_one_line_for_match_and_uci(tmp_path):
    """The sha256 in network.yaml catches 16 flipped bytes; match.py and uci.py say so in one line, exit 2."""
    import jax

    import games
    import models
    from models import network_dir
    cfg = load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml")
    game = games.make("chess")
    net = models.make_network(cfg.network, game.spec)
    obs = game.observe(game.init(jax.random.split(jax.random.PRNGKey(0), 1)))
    directory = network_dir.save(tmp_path / "net", cfg.network, net.init(jax.random.PRNGKey(0), obs, train=False),
                                        game="chess")
    params = directory / network_dir.PARAMS_FILE
    data = bytearray(params.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 16):
        data[i] ^= 0xFF
    params.write_bytes(bytes(data))
    for cli, args in (("uci.py", ["--agent", f"mcts:net={directory},sims=8"]),
                      ("match.py", [f"policy:net={directory}", "random", "--games", "1", "--no-progress"])):
        r = subprocess.run([sys.executable, str(ROOT / cli), *args], cwd=ROOT, env=ENV, capture_output=True,
                           text=True, timeout=120, input="uci\nquit\n")
        assert r.returncode == 2, (cli, r.stdout[-500:], r.stderr[-2000:])
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"{cli}: {params}: checksum mismatch"), (cli, r.stderr)
        assert "copy the network directory again" in lines[0]
