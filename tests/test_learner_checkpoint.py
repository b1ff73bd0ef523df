"""learner/checkpoint.py: a TrainState restores exactly; a signal during a save waits for it; a damaged
newest checkpoint falls back to the previous one, set aside, never deleted."""
from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest
from test_learner import ttt_setup

from learner.checkpoint import Checkpointer
from learner.config import LearnerConfig
from learner.train import init_train_state, make_train_step


def test_checkpoint_restores_state_exactly(tmp_path):
    game, net, batch = ttt_setup()
    cfg = LearnerConfig(batch_size=32)
    state = init_train_state(net, cfg, batch.observation[:1], jax.random.PRNGKey(1))
    step = make_train_step(net, cfg)
    for _ in range(3):
        state, _ = step(state, batch)
    with Checkpointer(tmp_path / "ck") as ckpt:
        ckpt.save(state, {"samples_trained": 96})
    fresh = init_train_state(net, cfg, batch.observation[:1], jax.random.PRNGKey(2))
    with Checkpointer(tmp_path / "ck") as ckpt:
        restored, meta = ckpt.restore_latest(fresh)
    assert meta == {"samples_trained": 96} and int(restored.step) == 3
    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(restored)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # Continuing from the restored state gives the same next step as continuing the original.
    s1, m1 = step(state, batch)
    s2, m2 = step(restored, batch)
    np.testing.assert_allclose(m1["loss"], m2["loss"], rtol=1e-6)
    with Checkpointer(tmp_path / "empty") as ckpt:
        assert ckpt.restore_latest(fresh) is None


def test_a_sigterm_during_a_checkpoint_save_is_raised_after_it_whole(tmp_path, monkeypatch):
    """A run's periodic save cut short by SIGTERM left orbax's writer filling the step's temporary
    directory while the stop's own save of the same step removed it ("Directory not empty", exit 2,
    no checkpoint of the step). The signal now waits for the save: the step restores, the stop is
    raised once, and saving the step again at the stop is a no-op."""
    import os
    import signal

    from runtime import signals
    game, net, batch = ttt_setup()
    cfg = LearnerConfig(batch_size=32)
    state, _ = make_train_step(net, cfg)(init_train_state(net, cfg, batch.observation[:1], jax.random.PRNGKey(1)),
                                         batch)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signals.stop_on_signals()
        with Checkpointer(tmp_path / "ck") as ckpt:
            save = ckpt._manager.save

            def save_then_sigterm(*args, **kwargs):  # the signal lands while the step's files are written
                saved = save(*args, **kwargs)
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(10_000):  # bytecode boundaries: the handler has run by now
                    pass
                return saved
            monkeypatch.setattr(ckpt._manager, "save", save_then_sigterm)
            with pytest.raises(KeyboardInterrupt):
                ckpt.save(state, {"samples_trained": 32})
            assert not signals._stop_requested  # raised when the save ended: acted on once
            assert [p.name for p in (tmp_path / "ck").iterdir()] == ["1"]  # whole when the stop is raised
            monkeypatch.undo()
            ckpt.save(state, {"samples_trained": 32})  # the stop's save of the same step
            assert ckpt._manager.all_steps() == [1]
        fresh = init_train_state(net, cfg, batch.observation[:1], jax.random.PRNGKey(2))
        with Checkpointer(tmp_path / "ck") as ckpt:
            restored, meta = ckpt.restore_latest(fresh)
        assert int(restored.step) == 1 and meta == {"samples_trained": 32}
    finally:
        signal.signal(signal.SIGTERM, previous)
        signals._stop_requested = False  # a direct raise (without the deferral) leaves the flag set


def _two_checkpoints(tmp_path):
    """Checkpoints at steps 1 and 2 (samples 32, 64) and a fresh state to restore into."""
    game, net, batch = ttt_setup()
    cfg = LearnerConfig(batch_size=32)
    state = init_train_state(net, cfg, batch.observation[:1], jax.random.PRNGKey(1))
    step = make_train_step(net, cfg)
    ckpt = Checkpointer(tmp_path / "ck")
    saved = []
    for i in range(2):
        state, _ = step(state, batch)
        ckpt.save(state, {"samples_trained": 32 * (i + 1)})
        saved.append(jax.device_get(state))  # the step donates its input
    ckpt.close()
    return saved, init_train_state(net, cfg, batch.observation[:1], jax.random.PRNGKey(2))


def _largest_file(directory: Path) -> Path:
    return max((p for p in directory.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")  # no traceback noise either
@pytest.mark.parametrize("damage", ["flip", "truncate", "metadata"])
def test_unreadable_newest_checkpoint_falls_back_to_the_previous(tmp_path, damage):
    saved, fresh = _two_checkpoints(tmp_path)
    newest = tmp_path / "ck" / "2"
    if damage == "flip":  # orbax restores this silently: the crc32 in meta catches it
        data_file = _largest_file(newest / "state")
        data = bytearray(data_file.read_bytes())
        for i in range(len(data) // 2, len(data) // 2 + 16):
            data[i] ^= 0xFF
        data_file.write_bytes(bytes(data))
    elif damage == "truncate":
        data_file = _largest_file(newest / "state")
        data_file.write_bytes(data_file.read_bytes()[:1000])
    else:
        (newest / "state" / "_METADATA").write_text("garbage")
    warnings = []
    ckpt = Checkpointer(tmp_path / "ck")
    restored, meta = ckpt.restore_latest(fresh, warn=warnings.append)
    assert int(restored.step) == 1 and meta == {"samples_trained": 32}
    for a, b in zip(jax.tree.leaves(saved[0]), jax.tree.leaves(restored)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert len(warnings) == 1 and "step 2 is unreadable" in warnings[0] and "restored step 1" in warnings[0]
    assert not newest.exists() and (tmp_path / "ck" / "unreadable-2").is_dir()  # set aside, not deleted
    # the run goes on: step 2 can be saved again (it is no longer an orbax step) and restores
    ckpt.save(saved[1], {"samples_trained": 64})
    ckpt.close()
    with Checkpointer(tmp_path / "ck") as ckpt:
        again, meta = ckpt.restore_latest(fresh, warn=warnings.append)
    assert int(again.step) == 2 and meta == {"samples_trained": 64} and len(warnings) == 1


def test_no_readable_checkpoint_is_one_line_and_moves_nothing(tmp_path):
    from learner.checkpoint import CheckpointError
    _, fresh = _two_checkpoints(tmp_path)
    for step in ("1", "2"):
        (tmp_path / "ck" / step / "state" / "_METADATA").write_text("garbage")
    with pytest.raises(CheckpointError) as info, Checkpointer(tmp_path / "ck") as ckpt:
        ckpt.restore_latest(fresh, warn=pytest.fail)
    assert "no readable checkpoint" in str(info.value) and "\n" not in str(info.value)
    assert (tmp_path / "ck" / "2").is_dir() and (tmp_path / "ck" / "1").is_dir()
