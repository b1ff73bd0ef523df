"""Chunk files: game records appended as msgpack frames, each one on disk (fsync) before it counts.

    replay/chunk-000000.msgpack, chunk-000001.msgpack, ...   (a new chunk every `games_per_chunk`)

Chunks are shards of replay/shards.py (its framing with a CRC32 per record, its writer and reader);
this module adds the chunk names, the game-record decoding and the damage scan with quarantine.

A writer never appends to a chunk it did not create, so a file torn by a crash (kill -9 mid-write)
stays as it was; readers skip such a torn tail (it was never acknowledged) and report a complete
frame whose checksum fails as corruption, naming the file.

Damage (a frame that fails its checksum, or bytes that are no frame at all) is found by
`scan_chunk`, which keeps every intact frame before and after it: each frame starts with the same
six bytes (msgpack of `["zcgr", ...`), so after a bad frame the scan resumes at the next start whose
frame passes its checksum. `quarantine` then moves the damaged file to `quarantine/` (never deleted)
and puts a file of only its intact frames (their original bytes) in its place.
"""
from __future__ import annotations

import dataclasses
import io
import os
import shutil
from pathlib import Path
from typing import Iterator

import msgpack

from replay import shards
from replay.record import MAGIC, GameRecord, RecordError, SchemaError, decode_frame, encode

CHUNKS = shards.ShardNames("chunk", 6)


def chunk_paths(directory: str | os.PathLike) -> list[Path]:
    """The chunk files of `directory`, oldest first."""
    return CHUNKS.paths(directory)


def chunk_index(path: str | os.PathLike) -> int:
    """The sequence number of a chunk file (chunk-000042.msgpack -> 42)."""
    return CHUNKS.index(path)


def read_chunk(path: str | os.PathLike) -> Iterator[GameRecord]:
    """Records of one chunk file in order; a torn (incomplete) last frame is skipped silently."""
    for frame in shards.frames(path):
        yield decode_frame(frame.obj, where=f"{path}: frame {frame.index}")


_FRAME_START = shards.frame_start(MAGIC)  # every frame begins [fixarray(4), "zcgr", ...
QUARANTINE = "quarantine"  # damaged chunk files are moved to <replay>/quarantine/


@dataclasses.dataclass
class ChunkScan:
    """What `scan_chunk` found in one chunk file."""

    path: Path
    records: list[GameRecord]  # the intact records, in file order
    spans: list[tuple[int, int]]  # their byte ranges [start, end) in the file
    damaged_games: int  # games lost to damage (frame starts inside the damaged ranges, at least 1 per range)
    first_damage: str  # where the first damage is ("frame 3 at byte 1234: checksum mismatch ..."), "" if none
    torn_bytes: int  # bytes of an incomplete last frame (a crash mid-write: never acknowledged), skipped


def _frame_at(data: bytes, pos: int, path: Path, index: int):
    """(record, end) for the frame at `pos`; (None, reason) if it is no intact frame, with reason
    "torn" when it runs past the end of the file. An unknown schema version raises (not damage)."""
    stream = io.BytesIO(data)  # shares `data` (no copy)
    stream.seek(pos)
    unpacker = msgpack.Unpacker(stream, raw=False, max_buffer_size=shards.MAX_FRAME)
    try:
        frame = unpacker.unpack()
    except msgpack.OutOfData:
        return None, "torn"
    except (ValueError, msgpack.UnpackException) as e:  # BufferFull, FormatError, StackError, ...
        return None, f"not msgpack ({type(e).__name__})"
    where = f"{path}: frame {index}"
    try:
        return decode_frame(frame, where=where), pos + unpacker.tell()
    except SchemaError:
        raise
    except RecordError as e:
        return None, str(e).removeprefix(where + ": ")


def scan_chunk(path: str | os.PathLike) -> ChunkScan:
    """Every intact record of a chunk file, around any damage (see the module docstring)."""
    path = Path(path)
    data = path.read_bytes()
    scan = ChunkScan(path, [], [], 0, "", 0)
    pos = 0
    while pos < len(data):
        record, end = _frame_at(data, pos, path, len(scan.records) + scan.damaged_games)
        if record is not None:
            scan.records.append(record)
            scan.spans.append((pos, end))
            pos = end
            continue
        resume = _next_intact(data, pos + 1, path)
        if resume is None and end == "torn" and data.find(_FRAME_START, pos + 1) < 0:
            scan.torn_bytes = len(data) - pos  # the last frame, cut short: a crash mid-write
            break
        stop = len(data) if resume is None else resume
        if not scan.first_damage:
            scan.first_damage = f"frame {len(scan.records)} at byte {pos}: {end}"
        scan.damaged_games += max(1, data.count(_FRAME_START, pos, stop))
        pos = stop
    return scan


def _next_intact(data: bytes, pos: int, path: Path) -> int | None:
    """Offset of the next frame start at or after `pos` whose frame is intact, or None."""
    pos = data.find(_FRAME_START, pos)
    while pos >= 0:
        if _frame_at(data, pos, path, -1)[0] is not None:
            return pos
        pos = data.find(_FRAME_START, pos + 1)
    return None


def quarantine(scan: ChunkScan) -> Path:
    """Moves a damaged chunk file to quarantine/ (a new name if one is there already) and leaves
    in its place a file of its intact frames, byte for byte (none: no file). Returns the new path.
    Crash-safe: the damaged file is in quarantine/ before its replacement is renamed into place."""
    path = scan.path
    qdir = path.parent / QUARANTINE
    qdir.mkdir(exist_ok=True)
    dest, n = qdir / path.name, 0
    while dest.exists():
        n += 1
        dest = qdir / f"{path.name}.{n}"
    data = path.read_bytes()
    intact = path.with_name(path.name + ".intact")  # not a chunk name: never read as one
    if scan.spans:
        with open(intact, "wb") as f:
            for start, end in scan.spans:
                f.write(data[start:end])
            f.flush()
            os.fsync(f.fileno())
    try:
        os.link(path, dest)
    except OSError:  # no hard links on this file system
        shutil.copy2(path, dest)
    shards.fsync_dir(qdir)
    if scan.spans:
        os.replace(intact, path)
    else:
        path.unlink()
    shards.fsync_dir(path.parent)
    return dest


def read_all(directory: str | os.PathLike) -> Iterator[GameRecord]:
    """Every record of every chunk in `directory`, oldest first."""
    for path in chunk_paths(directory):
        yield from read_chunk(path)


class ChunkWriter(shards.FrameWriter):
    """Appends records to chunk files of `games_per_chunk` games; `append` returns once durable.
    A new writer starts a new chunk: it never appends to a file it did not create."""

    def __init__(self, directory: str | os.PathLike, games_per_chunk: int = 256):
        super().__init__(directory, CHUNKS, games_per_chunk)
        self.games_per_chunk = games_per_chunk

    def append(self, record: GameRecord) -> None:
        """Writes one record and fsyncs it (and, for a new chunk, its directory entry)."""
        self.append_frames([encode(record)])

    def append_frames(self, frames: list[bytes]) -> list[Path]:
        """Writes encoded records (`encode`'s frames, as they came) in order and fsyncs each chunk
        file they went to once; returns the file each went to."""
        return super().append(frames)
