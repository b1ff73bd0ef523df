"""Disk retention: delete the oldest chunk files once newer ones hold enough positions.

    retention = DiskRetention("runs/x/replay", keep_positions=20_000_000)   # 0: keep every game
    for path in retention.live_chunks(): ...       # the chunk files to reload, oldest first
    retention.count(path, plies, stats)            # after each acknowledged game
    retention.prune()                              # deletes what is no longer needed

A chunk file is deleted only when the newer files (the one being written included) hold at least
`keep_positions` positions; set it at or above the replay window so a reload still fills the window.
`pruned.json` records the newest deleted chunk index and the totals of the games deleted with it
(games, positions, outcome counters). It is replaced atomically *before* a file is deleted, so the
run's totals survive pruning, and a crash between the two steps leaves a file that the next start
deletes instead of counting twice.
"""
from __future__ import annotations

import collections
import json
import os
from pathlib import Path

from replay import chunks

_PRUNED = "pruned.json"


class DiskRetention:
    """Tracks positions per chunk file of one replay directory and deletes the oldest beyond the budget."""

    def __init__(self, directory: str | os.PathLike, keep_positions: int):
        self.directory = Path(directory)
        self.keep_positions = keep_positions
        path = self.directory / _PRUNED
        self.pruned = {"through": -1, "games": 0, "positions": 0, "stats": {}}
        if path.exists():
            try:
                self.pruned.update(json.loads(path.read_text()))
            except ValueError as e:
                raise ValueError(f"{path} is corrupt ({e}); it holds the totals of deleted chunk files") from None
        self._files: collections.OrderedDict[Path, list] = collections.OrderedDict()  # path -> [games, positions, Counter]
        self._positions = 0  # positions in the tracked files

    def live_chunks(self) -> list[Path]:
        """Chunk files not pruned, oldest first (one pruned just before a crash is deleted now)."""
        live = []
        for path in chunks.chunk_paths(self.directory):
            if chunks.chunk_index(path) <= self.pruned["through"]:
                path.unlink()
            else:
                live.append(path)
        return live

    def count(self, path: Path, plies: int, stats: collections.Counter) -> None:
        if not self.keep_positions:
            return  # nothing is ever deleted: no need to track the files
        entry = self._files.setdefault(Path(path), [0, 0, collections.Counter()])
        entry[0] += 1
        entry[1] += plies
        entry[2].update(stats)
        self._positions += plies

    def prune(self) -> None:
        """Deletes the oldest files while the newer ones keep `keep_positions` (the newest file, being
        written, is never deleted: it is last in `_files`)."""
        while len(self._files) > 1:
            oldest, (games, positions, stats) = next(iter(self._files.items()))
            if self._positions - positions < self.keep_positions:
                break
            self._files.popitem(last=False)
            self._positions -= positions
            self.pruned = {"through": chunks.chunk_index(oldest), "games": self.pruned["games"] + games,
                           "positions": self.pruned["positions"] + positions,
                           "stats": dict(collections.Counter(self.pruned["stats"]) + stats)}
            self._write_pruned()
            oldest.unlink()

    def _write_pruned(self) -> None:
        tmp = self.directory / (_PRUNED + ".tmp")
        with open(tmp, "w") as f:
            json.dump(self.pruned, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.directory / _PRUNED)
