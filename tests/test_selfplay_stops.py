"""Every way a self-play run stops, each followed by --resume: kill -9, Ctrl-C and SIGTERM (tic-tac-toe
runs of selfplay.py in their own process groups)."""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games
from configs.loader import load
from replay import chunks
from selfplay.config import SelfPlayConfig

ROOT = Path(__file__).resolve().parents[1]


def _games_on_disk(run_dir: Path) -> list[str]:
    return [r.game_id for r in chunks.read_all(run_dir / "replay")]


def _check_records_replay_exactly(run_dir: Path, n: int = 30) -> None:
    """pgx replay of (init key, actions) reproduces each stored observation, player and outcome."""
    game = games.make("tic_tac_toe")
    step, observe = jax.jit(game.step), jax.jit(game.observe)
    for record in list(chunks.read_all(run_dir / "replay"))[:n]:
        state = game.init(jnp.asarray(record.init_key)[None])
        for t in range(record.plies):
            np.testing.assert_array_equal(np.asarray(observe(state))[0], record.observation(t))
            assert int(state.current_player[0]) == record.to_play[t]
            state = step(state, jnp.asarray([record.actions[t]]))
        assert bool(game.terminal(state)[0]) and record.termination == "rules"
        np.testing.assert_array_equal(np.asarray(state.rewards[0]), record.rewards)


def _restored_checkpoint(run_dir: Path):
    """The run's newest checkpoint, restored as `selfplay.py --resume` restores it: (TrainState, samples trained)."""
    from selfplay import prepare
    cfg = load(SelfPlayConfig, run_dir / "config.yaml")
    game = games.make(cfg.game)
    start = prepare.open_run(cfg, game, prepare.read_inputs(cfg, game, resume=True), resume=True)
    with start.checkpointer:
        assert start.samples_trained, "no checkpoint restored"
        return start.state, start.samples_trained


def _checkpoint_steps(run_dir: Path) -> list[int]:
    ckpts = run_dir / "checkpoints"
    return sorted(int(p.name) for p in ckpts.glob("[0-9]*") if p.name.isdigit()) if ckpts.exists() else []


def _start(base: list[str], *overrides: str, stderr: Path, how: str = "") -> subprocess.Popen:
    """selfplay.py in its own process group, progress lines every second on stdout, its stderr to the
    file `stderr` (read back when a stop fails). `how`: "ctrl-c" (SIGINT at its default, as in a
    terminal), "sigterm" (SIGINT ignored, as `nohup ... &` from a script leaves it: only SIGTERM can
    stop it), "" (either)."""
    def own_group():
        os.setsid()
        signal.signal(signal.SIGINT, signal.SIG_IGN if how == "sigterm" else signal.SIG_DFL)

    cmd = base + ["--set", "learner.max_steps=100000", "--set", "log_every_seconds=1"]
    for o in overrides:
        cmd += ["--set", o]
    with open(stderr, "w") as err:  # the child holds its own descriptor: ours closes at once
        proc = subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                                stdout=subprocess.PIPE, stderr=err, text=True, preexec_fn=own_group)
    proc.stderr_path = stderr
    proc.lines = _read_lines(proc)
    return proc


def _read_lines(proc: subprocess.Popen) -> queue.Queue:
    """A thread moves the run's stdout lines into a queue, then None at its end: a reader with a
    deadline never blocks in readline while the run prints nothing."""
    lines: queue.Queue = queue.Queue()

    def read():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _wait_for_step(proc: subprocess.Popen, step: int, timeout: float = 150) -> None:
    """Waits for a progress line ("[   12s] games ... step N ...") with N >= `step`; fails at the
    deadline whether or not the run prints."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = proc.lines.get(timeout=max(deadline - time.monotonic(), 0))
        except queue.Empty:
            pytest.fail(f"no step {step} within {timeout:.0f} s")
        if line is None:
            pytest.fail(f"self-play exited before step {step}")
        if " step " in line and int(line.split(" step ")[1].split()[0]) >= step:
            return


def _kill_dash_nine(proc: subprocess.Popen) -> None:
    """kill -9 of the whole run: the driver, Ray's daemons (its process group) and the Ray workers
    (own process groups, children of the raylet), all at once."""
    import psutil
    try:  # a driver that already exited (the test's own assertion says why) leaves its group to kill
        workers = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        workers = []
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for w in workers:
        try:
            w.kill()
        except psutil.NoSuchProcess:
            pass
    proc.wait()
    psutil.wait_procs(workers, timeout=10)


def _stderr_tail(proc: subprocess.Popen, chars: int = 4000) -> str:
    return proc.stderr_path.read_text()[-chars:]


def _stopped_summary(proc: subprocess.Popen, how: str) -> dict:
    """Ctrl-C (SIGINT to the process group) or SIGTERM (to the driver alone); the run's JSON summary
    (its last line on stdout with --json), with "stop_seconds": from the signal to the exit."""
    import json
    try:
        sent = time.monotonic()
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.terminate()
        proc.wait(timeout=90)
        stop_seconds = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, f"exit {proc.returncode} after {how}; stderr ends:\n{_stderr_tail(proc)}"
    lines = []
    while (line := proc.lines.get(timeout=30)) is not None:
        lines.append(line)
    return {**json.loads("".join(lines).strip().splitlines()[-1]), "stop_seconds": stop_seconds}


@pytest.mark.slow
def test_kill_nine_ctrl_c_and_sigterm_each_resume_exactly(tmp_path):
    """One run through every way a run stops, each followed by --resume:
    1. kill -9 of everything (learner in a Ray actor): the games written and the last periodic
       checkpoint survive; the resumed run reloads every game and continues the step counter;
    2. Ctrl-C of the resumed run (a terminal's SIGINT to the process group): exit 0 and a final
       checkpoint at the step reached, not only the last periodic one;
    3. resumed with the learner in the driver and the evaluator on, stopped by SIGTERM to the driver
       alone (`kill`, a scheduler's preemption; SIGINT ignored as in a background job): the same;
       every stored game replays under pgx.
    A resume that runs to max_steps exactly: test_damage.py and test_evaluation.py (each resumes once)."""
    run_dir = tmp_path / "ttt_stops"
    base = [sys.executable, str(ROOT / "selfplay.py"), "--config", str(ROOT / "configs/tic_tac_toe.yaml"),
            "--no-progress", "--json", "--set", f"runs_dir={tmp_path}", "--set", "name=ttt_stops",
            "--set", "ray_num_cpus=1", "--set", "actors.num_cpus=1", "--set", "learner.num_cpus=0"]
    actor_no_eval = ["learner.placement=actor", "evaluation.enabled=false"]

    proc = _start(base, "learner.checkpoint_every=20", *actor_no_eval, stderr=tmp_path / "kill.err")
    try:
        deadline = time.monotonic() + 150
        while not (_checkpoint_steps(run_dir) and _checkpoint_steps(run_dir)[-1] >= 40):
            assert proc.poll() is None, f"self-play exited early: {_stderr_tail(proc)}"
            assert time.monotonic() < deadline, "no checkpoint at step >= 40 in time"
            time.sleep(1)
    finally:
        _kill_dash_nine(proc)
    killed_games = _games_on_disk(run_dir)
    killed_step = _checkpoint_steps(run_dir)[-1]
    assert len(killed_games) > 0

    # periodic checkpoints every 1000 steps from here: a checkpoint at the stop step is the stop's own
    proc = _start(base + ["--resume"], "learner.checkpoint_every=1000", *actor_no_eval,
                  stderr=tmp_path / "ctrl-c.err", how="ctrl-c")
    _wait_for_step(proc, killed_step + 10)
    after_ctrl_c = _stopped_summary(proc, "ctrl-c")
    assert after_ctrl_c["stop_reason"] == "interrupted"
    assert after_ctrl_c["start_step"] == killed_step  # from the last checkpoint, not from step 0
    assert after_ctrl_c["reloaded_games"] == len(killed_games)  # every game written before the kill
    assert _games_on_disk(run_dir)[:len(killed_games)] == killed_games
    assert after_ctrl_c["games_total"] == len(_games_on_disk(run_dir))  # counted = on disk, none lost
    assert _checkpoint_steps(run_dir)[-1] == after_ctrl_c["step"] >= killed_step + 10
    assert after_ctrl_c["samples_trained"] == after_ctrl_c["step"] * 128  # the preset's batch

    # an evaluation requested at every step, so one is in flight when SIGTERM comes: it is dropped and
    # its actor killed, not waited for (a scheduler kills a job 30 s after its SIGTERM; waiting for the
    # evaluation took 52 s here, waiting for the busy actor to close 11 s of a 15 s stop)
    proc = _start(base + ["--resume"], "learner.checkpoint_every=1000", "learner.placement=driver",
                  "evaluation.enabled=true", "evaluation.every_steps=1", "evaluation.openings=1000",
                  stderr=tmp_path / "sigterm.err", how="sigterm")
    _wait_for_step(proc, after_ctrl_c["step"] + 10)
    after_sigterm = _stopped_summary(proc, "sigterm")
    assert after_sigterm["stop_reason"] == "interrupted"
    assert after_sigterm["stop_seconds"] < 10, after_sigterm["stop_seconds"]
    assert after_sigterm["start_step"] == after_ctrl_c["step"]
    assert after_sigterm["games_total"] == len(_games_on_disk(run_dir))
    assert _checkpoint_steps(run_dir)[-1] == after_sigterm["step"] >= after_ctrl_c["step"] + 10
    # the SIGTERM checkpoint (the driver's learner wrote it) restores as --resume would: its step, its samples
    state, samples_trained = _restored_checkpoint(run_dir)
    assert int(state.step) == after_sigterm["step"] and samples_trained == after_sigterm["samples_trained"]
    _check_records_replay_exactly(run_dir)
