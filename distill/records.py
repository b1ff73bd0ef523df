"""The one record format of distillation data: msgpack shards plus an index for random access.

A record is a msgpack map, one per board:
    fen     str          the board (full FEN)
    game    str          game id (the train/test split is by game, see `split_of`)
    ply     int          half-moves since the game's start
    moves   [str]        every legal move, UCI
    values  [float]      win probability in [0, 1] of each move for the side to move (AV target);
                         NaN where a source gives none (teacher games' policy-only boards: they train
                         BC and AV-all's best-move term only)
    value   float        win probability of the board for the side to move (SV target)
    count   int          how often the board occurred in the source (weighted sampler), default 1
    policy  [float]      optional soft policy target over `moves` (self-play visit distribution)
    best    str          optional move to imitate (self-play: most visited); else argmax of values
    outcome float        optional game result for the side to move, in [0, 1] (self-play)
    full_search bool     optional, in corpora of older self-play runs: false for a ply searched with
                         the fast budget (playout cap randomization, since retired; its policy and Q
                         are weak targets), which no split includes; absent = true
    source  str          "stockfish", "selfplay", "teacher" (distill/teacher_games.py) or "search"
                         (distill/search_labels.py)

Shards `shard-00000.msgpack`, ... are the append-only shards of replay/shards.py (the one writer and
reader of the project's record files, shared with replay's chunks and frozen corpora): each record a
frame with the CRC32 of its msgpack map, fsynced as written, so a writer killed mid-record loses at most
that record (`ShardWriter` trims the torn tail on reopen) and a flipped byte is a ValueError naming the
shard and the frame. Shards written before the checksum hold bare msgpack maps; they are read as they
are (and appended to with framed records). `index.msgpack` holds (shard, offset, length, game, full)
per record and is rebuilt when the shards changed.
"""
from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Any, Iterator

import msgpack
import numpy as np

from replay import shards

INDEX_NAME = "index.msgpack"
REQUIRED_KEYS = ("fen", "game", "moves", "values", "value")


def split_of(game: str, test_fraction: float) -> str:
    """'test' or 'train' for a game id, stable across runs (crc32 of the id)."""
    return "test" if (zlib.crc32(game.encode()) % 10_000) < test_fraction * 10_000 else "train"


def check_record(rec: Any, where: str = "record") -> dict:
    """Raises ValueError naming the problem if `rec` is not a valid record."""
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: not a msgpack map")
    missing = [k for k in REQUIRED_KEYS if k not in rec]
    if missing:
        raise ValueError(f"{where}: missing field(s) {missing}")
    if len(rec["moves"]) != len(rec["values"]) or not rec["moves"]:
        raise ValueError(f"{where}: moves and values must be non-empty and of equal length")
    return rec


class ShardWriter(shards.FrameWriter):
    """Appends records to shards of `shard_size` records in `out_dir`; resumable.

    Reopening a directory trims a torn last record and continues the last shard. Each record is
    fsynced as written, so a killed annotation keeps everything it finished.
    """

    def __init__(self, out_dir: str | Path, shard_size: int = 10_000):
        super().__init__(out_dir, shards.RECORD_SHARDS, shard_size, continue_last=True)
        self.dir = self.directory
        self.shard_size = shard_size

    def write(self, rec: dict) -> None:
        """Checks one record and appends it, on disk when this returns."""
        self.write_many([rec])

    def write_many(self, recs) -> None:
        """Checks records and appends them in order, on disk (one fsync) when this returns."""
        self.append([shards.pack_map(check_record(rec)) for rec in recs])


def shard_paths(directory: str | Path) -> list[Path]:
    """The shard files of a record directory, in write order."""
    return shards.RECORD_SHARDS.paths(directory)


def iter_records(directory: str | Path) -> Iterator[dict]:
    """Every complete record of every shard, in write order (a torn tail is skipped: the writer's
    next open trims it); a corrupt record raises ValueError naming the shard and the frame."""
    for path in shard_paths(directory):
        for frame in shards.frames(path):
            yield shards.unpack_map(frame.obj, f"{path}: frame {frame.index}")


def build_index(directory: str | Path, write: bool = True) -> dict:
    """Scans the shards and (if `write`) writes `index.msgpack`: shard names and sizes, per record
    its shard, offset, length, game id and whether it was a full search (`full_search`, default true).
    Every record's checksum is verified on the way: a corrupt one raises ValueError naming it."""
    directory = Path(directory)
    paths = shard_paths(directory)
    index = {"shards": [p.name for p in paths], "sizes": [], "shard": [], "offset": [],
             "length": [], "game": [], "full": []}
    for i, path in enumerate(paths):
        data = path.read_bytes()  # one read: a shard still being appended to may grow meanwhile
        index["sizes"].append(len(data))
        for frame in shards.frames(data, where=str(path)):  # a torn tail (a writer still at work) ends it
            rec = shards.unpack_map(frame.obj, f"{path}: frame {frame.index}")
            index["shard"].append(i)
            index["offset"].append(frame.start)
            index["length"].append(frame.end - frame.start)
            index["game"].append(rec.get("game", ""))
            index["full"].append(bool(rec.get("full_search", True)))
    if write:
        tmp = directory / (INDEX_NAME + ".tmp")
        tmp.write_bytes(msgpack.packb(index, use_bin_type=True))
        os.replace(tmp, directory / INDEX_NAME)
    return index


def fixed_sample(indices: np.ndarray, n: int) -> np.ndarray:
    """`n` of `indices` (e.g. a test split) chosen at random, the same choice every call, in directory
    order: held-out figures that span every source of a union, not its first source's first boards."""
    if len(indices) <= n:
        return indices
    return np.sort(np.random.default_rng(0).choice(indices, n, replace=False))


def resume_job(out_dir: str | Path, job: dict, job_file: str, what: str) -> bool:
    """For a job that writes records into `out_dir`: False for a new directory (or one whose job failed
    before its first record), which gets `job` written to `job_file`; True where an earlier run of the
    same job left records to continue after; FileExistsError if it holds another job's records (`what`
    names this job's, e.g. "these teacher games")."""
    out_dir = Path(out_dir)
    if not out_dir.exists() or not shard_paths(out_dir):
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / job_file).write_text(json.dumps(job, indent=1))
        return False
    try:
        earlier = json.loads((out_dir / job_file).read_text())
    except (OSError, ValueError):
        earlier = None
    if earlier != job:
        raise FileExistsError(f"{out_dir} holds other records than {what}: write into a new directory")
    return True


class RecordStore:
    """Random access to the records of a directory: `len(store)`, `store[i]`, `store.split(...)`."""

    def __init__(self, directory: str | Path):
        self.dir = Path(directory)
        if not self.dir.is_dir() or not shard_paths(self.dir):
            raise FileNotFoundError(f"no record shards (shard-*.msgpack) in {self.dir}")
        self.index = self._load_index()
        self._shards = [open(self.dir / n, "rb") for n in self.index["shards"]]

    def _load_index(self) -> dict:
        path = self.dir / INDEX_NAME
        paths = shard_paths(self.dir)
        if path.exists():
            try:
                index = msgpack.unpackb(path.read_bytes(), raw=False)
                if ("full" in index and index["shards"] == [p.name for p in paths]
                        and index["sizes"] == [p.stat().st_size for p in paths]):
                    return index
            except Exception:  # a corrupt index is rebuilt from the shards, never trusted
                pass
        # a frozen corpus (manifest.json) or a read-only directory is never written into
        frozen = (self.dir / "manifest.json").exists() or not os.access(self.dir, os.W_OK)
        return build_index(self.dir, write=not frozen)

    def __len__(self) -> int:
        return len(self.index["offset"])

    def __getitem__(self, i: int) -> dict:
        f = self._shards[self.index["shard"][i]]
        offset = self.index["offset"][i]
        where = f"{f.name}: record {i} (at byte {offset})"
        f.seek(offset)
        data = f.read(self.index["length"][i])
        try:
            obj = msgpack.unpackb(data, raw=False)
        except Exception as e:
            raise shards.RecordError(f"{where} is corrupt ({e})") from None
        return check_record(shards.unpack_map(obj, where), where)

    def split(self, name: str, test_fraction: float) -> np.ndarray:
        """Indices [N] of the records in split `name` ('train' or 'test'), less an older corpus's
        plies searched with the fast budget (`full_search` false)."""
        if name not in ("train", "test"):
            raise ValueError(f"unknown split {name!r}")
        keep = lambda i, g: split_of(g, test_fraction) == name and self.index["full"][i]
        return np.array([i for i, g in enumerate(self.index["game"]) if keep(i, g)], dtype=np.int64)

    def close(self) -> None:
        for f in self._shards:
            f.close()
