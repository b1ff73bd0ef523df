"""Append-only msgpack shards with a checksum per record: the one on-disk form of every record the
project streams to files (replay's game records, distill's annotations and frozen corpora).

A shard is a file `<prefix>-NNNNN.msgpack` in a directory (`ShardNames`): frames appended back to back,
each frame one record:

    [magic, version, crc32(payload), payload]     msgpack array; payload = the record's msgpack bytes

`magic` names the kind of record ("zcgr" a game record, replay/record.py; "zcmr" a map record,
`pack_map`), `version` its schema, and the CRC32 of the payload catches a flipped byte in the record
it hits. Older map records (distill shards and frozen corpora written before the checksum) are bare
msgpack maps; `unpack_map` still reads them, and a shard may hold both (an old shard appended to).

Durability (`FrameWriter`): `append(frames)` writes, flushes and fsyncs every file it wrote to
before it returns (one fsync per file per call, so a caller batches what may be acknowledged together),
and fsyncs the directory when it starts a new file, so what `append` returned is on disk after a
crash. A writer killed mid-frame leaves a torn tail: a frame cut short at the end of the file.
Readers (`frames`) stop before it silently (it was never acknowledged), so everything complete is read;
bytes that are not msgpack at all, a frame that fails its checksum or a record of another kind raise
`RecordError` (a ValueError) naming the file and the frame.

Why it lives here: replay/ writes game records and freezes corpora in the record layout that
distill/ reads, and distill/ may import replay/ but not the other way round (tests/test_layout.py), so
the one writer sits in the lower room. It knows files and framing only, no schema of either room.
"""
from __future__ import annotations

import dataclasses
import io
import os
import re
import zlib
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, NamedTuple

import msgpack

MAX_FRAME = 1 << 30  # the largest frame a reader accepts (a chess game record is a few MB)


class RecordError(ValueError):
    """A record that cannot be decoded: corrupt (checksum), truncated or of an unknown schema."""


class SchemaError(RecordError):
    """A record of a schema version this code does not read (written by newer code: not damage)."""


# -- frames ---------------------------------------------------------------------------------------

def pack_frame(magic: str, version: int, payload: bytes) -> bytes:
    """One record's frame: `[magic, version, crc32(payload), payload]` as msgpack bytes."""
    return msgpack.packb([magic, version, zlib.crc32(payload), payload], use_bin_type=True)


def frame_start(magic: str) -> bytes:
    """The bytes every frame of `magic` begins with (fixarray(4), then the magic string): where a scan
    past damage may resume."""
    return b"\x94" + msgpack.packb(magic)


def is_frame(obj: Any, magic: str) -> bool:
    return isinstance(obj, (list, tuple)) and len(obj) == 4 and obj[0] == magic


def frame_payload(obj: Any, magic: str, versions: Iterable[int], where: str,
                  kind: str = "zerochess record") -> tuple[int, bytes]:
    """(version, payload) of an unpacked frame of `magic`, its checksum verified. RecordError naming
    `where` if it is no such frame or fails its checksum; SchemaError for a version not in `versions`."""
    if not is_frame(obj, magic):
        raise RecordError(f"{where}: not a {kind}")
    _, version, crc, payload = obj
    versions = tuple(versions)
    if version not in versions:
        raise SchemaError(f"{where}: record schema version {version}, this code reads {versions}")
    if not isinstance(payload, bytes) or zlib.crc32(payload) != crc:
        raise RecordError(f"{where}: checksum mismatch, the record is corrupt")
    return version, payload


# -- map records (distill's annotations, frozen corpora) -------------------------------------------

MAP_MAGIC = "zcmr"
MAP_VERSION = 1


def pack_map(record: dict) -> bytes:
    """A map record's frame (the map msgpacked as the payload)."""
    return pack_frame(MAP_MAGIC, MAP_VERSION, msgpack.packb(record, use_bin_type=True))


def unpack_map(obj: Any, where: str) -> dict:
    """The map of an unpacked frame, checksum verified; a bare map (written before frames) as it is."""
    if isinstance(obj, dict):
        return obj
    _, payload = frame_payload(obj, MAP_MAGIC, (MAP_VERSION,), where, kind="record map")
    try:
        record = msgpack.unpackb(payload, raw=False)
    except (ValueError, msgpack.UnpackException) as e:
        raise RecordError(f"{where}: malformed record body ({e})") from None
    if not isinstance(record, dict):
        raise RecordError(f"{where}: malformed record body (not a map)")
    return record


# -- shard files ----------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ShardNames:
    """Shard files `<prefix>-<index, zero-padded to digits>.msgpack` of a directory."""

    prefix: str
    digits: int

    def name(self, index: int) -> str:
        return f"{self.prefix}-{index:0{self.digits}d}.msgpack"

    def index(self, path: str | os.PathLike) -> int:
        """The sequence number of a shard file (chunk-000042.msgpack -> 42)."""
        match = re.fullmatch(rf"{re.escape(self.prefix)}-(\d{{{self.digits},}})\.msgpack", Path(path).name)
        if match is None:
            raise ValueError(f"{path}: not a {self.prefix} file ({self.name(0)}, ...)")
        return int(match.group(1))

    def paths(self, directory: str | os.PathLike) -> list[Path]:
        """The shard files of `directory` in write order (none if it does not exist)."""
        directory = Path(directory)
        if not directory.is_dir():
            return []
        found = []
        for p in directory.iterdir():
            try:
                found.append((self.index(p), p))
            except ValueError:
                continue
        return [p for _, p in sorted(found)]


RECORD_SHARDS = ShardNames("shard", 5)  # map records: distill's record directories, frozen corpora


class Frame(NamedTuple):
    index: int  # the frame's position in its file, from 0
    start: int  # its byte range [start, end) in the file
    end: int
    obj: Any  # the unpacked frame (or, in an older map shard, the bare map)


def frames(source: str | os.PathLike | bytes, where: str | None = None) -> Iterator[Frame]:
    """The complete frames of a shard (a path, or its bytes with `where` naming it), in order: a torn
    tail (the last frame cut short) ends the iteration silently; bytes that are no msgpack raise
    RecordError naming the file and the frame. Checksums are the record decoder's to verify."""
    if isinstance(source, bytes):
        yield from _frames(io.BytesIO(source), where or "shard")
        return
    with open(source, "rb") as f:
        yield from _frames(f, where or str(source))


def _frames(f: BinaryIO, where: str) -> Iterator[Frame]:
    unpacker = msgpack.Unpacker(f, raw=False, max_buffer_size=MAX_FRAME)
    index, start = 0, 0
    while True:
        try:
            obj = unpacker.unpack()
        except msgpack.OutOfData:
            return  # end of file, or a torn frame that was never acknowledged
        except (ValueError, msgpack.UnpackException) as e:  # BufferFull, FormatError, StackError, ...
            raise RecordError(f"{where}: frame {index} is corrupt ({e})") from None
        end = unpacker.tell()
        yield Frame(index, start, end, obj)
        index, start = index + 1, end


def fsync_dir(directory: str | os.PathLike) -> None:
    """Makes a directory's entries (a new or renamed file's name) durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FrameWriter:
    """Appends frames to shard files of `per_shard` frames in `directory`; `append` returns once durable.

    A new writer starts a new shard after the last one, unless `continue_last`: then it trims a torn
    tail off the last shard (a writer killed mid-frame) and fills that shard up first. Without it a
    writer never appends to a file it did not create, so a file torn by a crash stays as it was.
    """

    def __init__(self, directory: str | os.PathLike, names: ShardNames, per_shard: int,
                 continue_last: bool = False):
        if per_shard < 1:
            raise ValueError(f"per_shard must be at least 1, got {per_shard}")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.names = names
        self.per_shard = per_shard
        self.path: Path | None = None  # the shard file the last frame went to
        self._file: BinaryIO | None = None
        self._in_file = 0
        self._resume: tuple[Path, int] | None = None  # (last shard, its frames) to continue on first append
        existing = names.paths(self.directory)
        self._next_index = names.index(existing[-1]) + 1 if existing else 0
        if continue_last and existing:
            count = _trim_torn_tail(existing[-1])
            if count < per_shard:
                self._resume = (existing[-1], count)

    def append(self, frames: Iterable[bytes]) -> list[Path]:
        """Writes frames in order, then flushes and fsyncs each shard file they went to (once);
        returns the file each went to."""
        paths = []
        for frame in frames:
            if self._file is None or self._in_file >= self.per_shard:
                self._sync()
                self._open_next()
            self._file.write(frame)
            self._in_file += 1
            paths.append(self.path)
        self._sync()
        return paths

    def _sync(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())

    def _open_next(self) -> None:
        self.close()
        if self._resume is not None:
            (path, count), self._resume = self._resume, None
            self._file, self.path, self._in_file = open(path, "ab"), path, count
            return
        path = self.directory / self.names.name(self._next_index)
        self._next_index += 1
        self._file, self.path, self._in_file = open(path, "xb"), path, 0
        fsync_dir(self.directory)  # the new file's name survives a crash too

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _trim_torn_tail(path: Path) -> int:
    """Cuts a torn last frame off a shard file; returns its number of complete frames."""
    count, end = 0, 0
    for frame in frames(path):
        count, end = frame.index + 1, frame.end
    if end != path.stat().st_size:
        with open(path, "r+b") as f:
            f.truncate(end)
            f.flush()
            os.fsync(f.fileno())
    return count
