"""Learner checkpoints with orbax: params, batch stats, optimizer state, step, RNG and run counters.

    runs/<name>/checkpoints/<step>/state   the TrainState pytree (orbax StandardSave, no pickle)
    runs/<name>/checkpoints/<step>/meta    JSON: run counters (samples trained, positions seen, ...)

`restore_latest` returns None when there is nothing to resume from. A newest checkpoint that
cannot be read (missing or damaged files, or state whose crc32 no longer matches the one saved in
its meta: orbax's data files carry no checksum, so a flipped byte would restore silently) is moved
to `unreadable-<step>/` (never deleted) and the previous one is restored, with a warning on stderr.
When none is readable, CheckpointError says so in one line.

The state is a TrainState (the learner's) or a plain dict of arrays with a "step" (distill's
students): `restore_latest` gives back the type of the `like` it is handed.
"""
from __future__ import annotations

import contextlib
import os
import sys
import zlib
from pathlib import Path
from typing import Callable, TypeVar, Union

import jax
import numpy as np
import orbax.checkpoint as ocp

from learner.train import TrainState
from runtime import stops_deferred

State = TypeVar("State", bound=Union[TrainState, dict])


class CheckpointError(RuntimeError):
    """No checkpoint of a run directory can be restored."""


def _as_dict(state: TrainState | dict) -> dict:
    return state._asdict() if isinstance(state, TrainState) else dict(state)


def state_crc32(host_state: dict) -> int:
    """crc32 over every leaf's bytes (in tree order) of a host TrainState dict."""
    crc = 0
    for leaf in jax.tree.leaves(host_state):
        crc = zlib.crc32(np.ascontiguousarray(leaf).tobytes(), crc)
    return crc


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:160]}{'...' if len(text) > 160 else ''}"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


@contextlib.contextmanager
def _quiet_closed_loop_callbacks():
    """A failed orbax read (a truncated data file) leaves tensorstore callbacks aimed at orbax's
    already closed asyncio loop: each printed a traceback ("Event loop is closed", ~40 for one file)
    above the one line that reports the failure. Those are dropped while a restore runs; any other
    unraisable exception goes to the hook that was there."""
    previous = sys.unraisablehook

    def hook(unraisable):
        if not (isinstance(unraisable.exc_value, RuntimeError) and str(unraisable.exc_value) == "Event loop is closed"):
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


class Checkpointer:
    """Keeps the last `keep` checkpoints of one run directory."""

    def __init__(self, directory: str | os.PathLike, keep: int = 3,
                 since: str = "the games played since stay in replay",
                 fresh_start: str = "--resume trains from step 0 on the replay kept"):
        self.directory = Path(directory).absolute()
        # for the messages: what becomes of the work after a set-aside checkpoint, and what moving
        # every checkpoint away does
        self._since, self._fresh_start = since, fresh_start
        self._manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(max_to_keep=keep, create=True,
                                                 enable_async_checkpointing=False),
        )

    def save(self, state: TrainState | dict, meta: dict) -> None:
        """Saves synchronously (a Ctrl-C or kill right after loses nothing that was reported saved). A
        SIGTERM or Ctrl-C during the save is raised when it ends: cut short, the save's writer thread
        would go on filling the step's temporary directory while the stop's own save of the same step
        removed it."""
        step = int(_as_dict(state)["step"])
        if step in self._manager.all_steps():
            return
        host_state = jax.device_get(_as_dict(state))
        meta = {**meta, "state_crc32": state_crc32(host_state)}
        with stops_deferred():
            self._manager.save(step, args=ocp.args.Composite(state=ocp.args.StandardSave(host_state),
                                                             meta=ocp.args.JsonSave(meta)))
            self._manager.wait_until_finished()

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def restore_latest(self, like: State, warn: Callable[[str], None] = _stderr) -> tuple[State, dict] | None:
        """The newest readable checkpoint restored into the structure of `like`, with its meta; or
        None when there is none. Newer unreadable ones are set aside with one `warn` line."""
        steps = sorted(self._manager.all_steps(), reverse=True)
        if not steps:
            return None
        abstract = jax.tree.map(lambda x: np.zeros(np.shape(x), np.asarray(x).dtype), _as_dict(like))
        failed: list[tuple[int, str]] = []
        for step in steps:
            try:
                with _quiet_closed_loop_callbacks():
                    restored = self._manager.restore(step, args=ocp.args.Composite(
                        state=ocp.args.StandardRestore(abstract), meta=ocp.args.JsonRestore()))
                meta = dict(restored["meta"])
                crc = meta.pop("state_crc32", None)  # absent in checkpoints of older code
                if crc is not None and state_crc32(restored["state"]) != crc:
                    raise ValueError("state does not match the crc32 saved with it (damaged data file)")
            except Exception as e:  # orbax / tensorstore raise many types on missing or damaged files
                failed.append((step, _one_line(e)))
                continue
            if failed:  # only once an older one restored: a config that fits none moves nothing
                moved = [self._set_aside(bad) for bad, _ in failed]
                warn(f"checkpoint step {failed[0][0]} is unreadable ({failed[0][1]}); restored step {step} "
                     f"instead, {self._since} ({', '.join(moved)} kept for inspection)")
            state = restored["state"]
            return (TrainState(**state) if isinstance(like, TrainState) else state), meta
        raise CheckpointError(
            f"no readable checkpoint in {self.directory} (step {failed[0][0]}: {failed[0][1]}); move that "
            f"directory away and {self._fresh_start}")

    def _set_aside(self, step: int) -> str:
        """Renames checkpoint `step` to unreadable-<step> (orbax ignores it); returns the new path."""
        dest, n = self.directory / f"unreadable-{step}", 0
        while dest.exists():
            n += 1
            dest = self.directory / f"unreadable-{step}.{n}"
        os.rename(self.directory / str(step), dest)
        self._manager.reload()
        return str(dest)

    def close(self) -> None:
        self._manager.close()

    def __enter__(self) -> "Checkpointer":
        return self

    def __exit__(self, *exc) -> None:
        # closed, not left to the garbage collector: orbax's manager then calls into an asyncio
        # loop that is already closed ("Exception ignored ... Event loop is closed")
        self.close()
