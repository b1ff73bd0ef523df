"""Learner checkpoints with orbax: params, batch stats, optimizer state, step, RNG and run counters.

    runs/<name>/checkpoints/<step>/state   the TrainState pytree (orbax StandardSave, no pickle)
    runs/<name>/checkpoints/<step>/meta    JSON: run counters (samples trained, positions seen, ...)

`restore_latest` returns None when there is nothing to resume from.
"""
from __future__ import annotations

import os
from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp

from learner.train import TrainState


class Checkpointer:
    """Keeps the last `keep` checkpoints of one run directory."""

    def __init__(self, directory: str | os.PathLike, keep: int = 3):
        self.directory = Path(directory).absolute()
        self._manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(max_to_keep=keep, create=True,
                                                 enable_async_checkpointing=False),
        )

    def save(self, state: TrainState, meta: dict) -> None:
        """Saves synchronously (a Ctrl-C or kill right after loses nothing that was reported saved)."""
        step = int(state.step)
        if step in self._manager.all_steps():
            return
        host_state = jax.device_get(state._asdict())
        self._manager.save(step, args=ocp.args.Composite(state=ocp.args.StandardSave(host_state),
                                                         meta=ocp.args.JsonSave(meta)))
        self._manager.wait_until_finished()

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def restore_latest(self, like: TrainState) -> tuple[TrainState, dict] | None:
        """The newest checkpoint restored into the structure of `like`, with its meta; or None."""
        step = self._manager.latest_step()
        if step is None:
            return None
        abstract = jax.tree.map(lambda x: np.zeros(np.shape(x), np.asarray(x).dtype), like._asdict())
        restored = self._manager.restore(step, args=ocp.args.Composite(
            state=ocp.args.StandardRestore(abstract), meta=ocp.args.JsonRestore()))
        return TrainState(**restored["state"]), dict(restored["meta"])

    def close(self) -> None:
        self._manager.close()
