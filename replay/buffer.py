"""The replay buffer: a window of recent games in memory, every game durable on disk first.

Run it as a Ray actor (`ray.remote(ReplayBuffer)`); it is plain Python so tests can use it directly.

    buffer = ReplayBuffer("runs/x/replay", ReplayConfig(), num_actions=4672, max_legal_actions=218)
    ack = buffer.add(encode(record))     # returns after the record is fsynced to a chunk file
    ack = buffer.add_many(frames)        # several games, one fsync
    batch = buffer.sample(256, seed=7)   # a TrainingBatch, uniform over the positions of the window
    stats = buffer.stats()               # ReplayStats (replay/messages.py)

The window (replay/window.py) holds the positions of the most recent games in flat arrays, whole
games evicted oldest first past `window_positions`, observations bit-packed (games/packing.py), so
sampling is a vectorised gather and a batch crosses Ray's object store at ~1.4 KB per chess
position. Disk keeps every game unless `disk_positions` is set (replay/retention.py).

On reload a chunk file with a damaged record moves to `quarantine/` with its intact records kept
(replay/chunks.py `scan_chunk`, `quarantine`); `stats().games_quarantined` counts the games set aside.
With `strict` the first damaged record raises RecordError instead (naming the file and the frame).
"""
from __future__ import annotations

import collections
import os
from pathlib import Path
from typing import Iterator

import numpy as np

from replay import chunks
from replay.anchor import AnchorSet, anchor_rows, mix
from replay.config import ReplayConfig
from replay.messages import ReplayStats, TrainingBatch
from replay.record import GameRecord, RecordError, SchemaError, decode, encode
from replay.retention import DiskRetention
from replay.window import Window


def outcome_counters(record: GameRecord) -> collections.Counter:
    """One game's contribution to the outcome split, resignation and false-positive counts
    (keys: the counter fields of replay.messages.ReplayStats)."""
    c = collections.Counter()
    first = 0 if record.plies == 0 else int(record.to_play[0])
    r = record.rewards[first] if record.plies else 0.0
    c["first_player_wins" if r > 0 else "first_player_losses" if r < 0 else "draws"] += 1
    c["resigned"] += int(record.resigned)
    c["capped"] += int(record.termination == "cap")
    c["adjudicated"] += int(record.termination == "adjudicated")
    if record.resign_disabled:
        c["no_resign_games"] += 1
        c["resign_would_have"] += int(record.resign_would_have >= 0)
        c["resign_false_positives"] += int(record.resign_false_positive())
    return c


RECENT_GAMES = 4  # whole games kept beside the window (recent_games)


class ReplayBuffer:
    """Window of the most recent positions, persisted as chunk files under `directory`."""

    def __init__(self, directory: str | os.PathLike, config: ReplayConfig, num_actions: int,
                 max_legal_actions: int, reload: bool = True):
        """`reload=False` leaves reading the directory to an explicit `reload()` call (a Ray actor's
        constructor error has no cause attached; a method's error does)."""
        self.directory = Path(directory)
        self.config = config
        self.num_actions = num_actions
        self.max_legal_actions = max_legal_actions
        self._window = Window(config.window_positions, max_legal_actions)
        # beside the window only the plies of the last 200 games (their mean length) and the last few
        # games themselves (the sample PGN): memory stays the window's, whatever the games' size
        self._recent_plies: collections.deque[int] = collections.deque(maxlen=200)
        self._recent: collections.deque[GameRecord] = collections.deque(maxlen=RECENT_GAMES)
        self._writer: chunks.ChunkWriter | None = None
        self._closed = False  # after close() no game is written: the run's totals are final
        self._anchor: AnchorSet | None = None  # oracle boards mixed into samples (set_anchor)
        if reload:
            self.reload()

    def reload(self) -> ReplayStats:
        """Reads the directory (once, before the first `add`): the totals, the window refilled from
        the chunk files (checksums verified; damaged files quarantined or, with `strict`, a
        RecordError), the writer ready for a new chunk. Returns the stats."""
        config = self.config
        keep = max(config.disk_positions, config.window_positions) if config.disk_positions else 0
        self._retention = DiskRetention(self.directory, keep)
        pruned = self._retention.pruned  # totals of games whose chunk files were deleted
        self.games_total = pruned["games"]  # games ever written (this run dir, reload included)
        self.positions_total = pruned["positions"]
        self._stats = collections.Counter(pruned["stats"])  # outcome split, resignations, false positives
        self.games_quarantined = 0  # damaged games set aside by this reload
        self.quarantined: list[str] = []  # where their chunk files went
        for path in self._retention.live_chunks():  # reload: checksums verified, window refilled
            for record in self._reload(path):
                self._retention.count(path, record.plies, self._admit(record))
        self.reloaded_games = self.games_total
        self._writer = chunks.ChunkWriter(self.directory, config.games_per_chunk)
        return self.stats()

    def _reload(self, path: Path) -> Iterator[GameRecord]:
        """The intact records of one chunk file; a damaged file is quarantined (strict: raises)."""
        if self.config.strict:
            try:
                yield from chunks.read_chunk(path)
            except SchemaError:
                raise
            except RecordError as e:
                raise RecordError(f"{e}; without --set replay.strict=true the file moves to "
                                  f"{path.parent / chunks.QUARANTINE}/ and its intact games are kept") from None
            return
        scan = chunks.scan_chunk(path)
        if scan.damaged_games:
            self.quarantined.append(str(chunks.quarantine(scan)))
            self.games_quarantined += scan.damaged_games
        yield from scan.records

    # -- writing ---------------------------------------------------------------------------------
    def add(self, frame: bytes) -> dict:
        """Stores one encoded record; returns the totals once it is on disk (the acknowledgement)."""
        return self.add_many([frame])

    def add_many(self, frames: list[bytes]) -> dict:
        """Stores encoded records (one fsync for all); returns the totals once they are on disk."""
        if self._closed:  # an actor still playing while the run stops: its games are not acknowledged
            raise RuntimeError("the replay buffer is closed: the run is stopping")
        records = [decode(frame, where="record from actor") for frame in frames]
        for record, path in zip(records, self._writer.append_frames(frames)):
            self._retention.count(path, record.plies, self._admit(record))
        self._retention.prune()
        return {"games_total": self.games_total, "positions_total": self.positions_total}

    def _admit(self, record: GameRecord) -> collections.Counter:
        """Adds a record to the window and the totals; returns its outcome counters."""
        self._window.admit(record)
        self._recent.append(record)
        self._recent_plies.append(record.plies)
        self.games_total += 1
        self.positions_total += record.plies
        stats = outcome_counters(record)
        self._stats.update(stats)
        return stats

    # -- reading ---------------------------------------------------------------------------------
    def size(self) -> int:
        """Positions in the window."""
        return self._window.positions

    def sample(self, batch_size: int, seed: int, unpack: bool = False) -> TrainingBatch:
        """Uniform positions of the window as padded arrays (W = max_legal_actions):

        observation [B, *obs_shape] or, while the window is packed (every pgx game here), a
        games.packing.PackedObservation (bits [B, nbytes] uint8, values [B, P] float32) that the
        learner unpacks on its device; legal_actions [B, W] int32 (-1 pads), policy [B, W] float32,
        z [B] float32 outcome for the side to move, q [B] float32 the search's root value there.
        With anchor boards (`set_anchor`), the last replay.anchor_fraction of the rows are theirs.
        `unpack`: plain observations [B, *obs_shape] (unpacked here, on the host) in every case.
        """
        rng = np.random.default_rng(seed)
        k = anchor_rows(batch_size, self.config.anchor_fraction) if self._anchor is not None else 0
        batch = self._window.sample(rng, batch_size - k, unpack)
        if k == 0:
            return batch
        return mix(batch, self._anchor.sample(k, rng), self._window.obs_shape)

    def set_anchor(self, anchor: AnchorSet) -> None:
        """Mixes `anchor`'s boards into every sample from now on (replay.anchor_fraction of each;
        the run calls it once, before training)."""
        if not self.config.anchor_fraction:
            raise ValueError("set_anchor needs replay.anchor_fraction > 0")
        if anchor.legal_actions.shape[1] != self.max_legal_actions:
            raise ValueError(f"anchor boards have {anchor.legal_actions.shape[1]} move slots, this game "
                             f"{self.max_legal_actions}")
        self._anchor = anchor

    def stats(self) -> ReplayStats:
        """Totals, window size and the figures of recent games (for progress display and TensorBoard)."""
        return ReplayStats(
            games_total=self.games_total,
            positions_total=self.positions_total,
            window_games=self._window.games,
            window_positions=self._window.positions,
            window_bytes=self._window.nbytes(),
            mean_game_length=float(np.mean(self._recent_plies)) if self._recent_plies else 0.0,
            games_quarantined=self.games_quarantined,
            **{k: int(v) for k, v in self._stats.items()},  # a key not in ReplayStats is a TypeError
        )

    def recent_games(self, n: int) -> list[bytes]:
        """The last n games (encoded; at most RECENT_GAMES), e.g. for the sample PGN."""
        return [encode(g) for g in list(self._recent)[-n:]]

    def freeze(self, out_dir: str | os.PathLike) -> dict:
        """Writes every game on disk as an immutable corpus (see replay/corpus.py); returns its manifest."""
        self._writer.close()  # the next add opens a new chunk; frozen files are never appended to
        self._writer = chunks.ChunkWriter(self.directory, self.config.games_per_chunk)
        from replay import corpus  # lazily: `python -m replay.corpus` runs that module as __main__
        return corpus.freeze(self.directory, out_dir)

    def close(self) -> ReplayStats:
        """Stops writing (a later `add` fails unacknowledged); returns the final totals, which count
        exactly the games on disk."""
        self._closed = True
        self._writer.close()
        return self.stats()

