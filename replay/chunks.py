"""Chunk files: game records appended as msgpack frames, each one on disk (fsync) before it counts.

    replay/chunk-000000.msgpack, chunk-000001.msgpack, ...   (a new chunk every `games_per_chunk`)

A writer never appends to a chunk it did not create, so a file torn by a crash (kill -9 mid-write)
stays as it was; readers skip such a torn tail (it was never acknowledged) and report a complete
frame whose checksum fails as corruption, naming the file.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterator

import msgpack

from replay.record import GameRecord, RecordError, decode_frame, encode

_CHUNK = re.compile(r"^chunk-(\d{6})\.msgpack$")


def chunk_paths(directory: str | os.PathLike) -> list[Path]:
    """The chunk files of `directory`, oldest first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if _CHUNK.match(p.name))


def chunk_index(path: str | os.PathLike) -> int:
    """The sequence number of a chunk file (chunk-000042.msgpack -> 42)."""
    return int(_CHUNK.match(Path(path).name).group(1))


def read_chunk(path: str | os.PathLike) -> Iterator[GameRecord]:
    """Records of one chunk file in order; a torn (incomplete) last frame is skipped silently."""
    path = Path(path)
    with open(path, "rb") as f:
        unpacker = msgpack.Unpacker(f, raw=False, max_buffer_size=1 << 30)
        index = 0
        while True:
            try:
                frame = unpacker.unpack()
            except msgpack.OutOfData:
                return  # end of file, or a torn frame that was never acknowledged
            except (ValueError, msgpack.UnpackException) as e:
                raise RecordError(f"{path}: frame {index} is corrupt ({e})") from None
            yield decode_frame(frame, where=f"{path}: frame {index}")
            index += 1


def read_all(directory: str | os.PathLike) -> Iterator[GameRecord]:
    """Every record of every chunk in `directory`, oldest first."""
    for path in chunk_paths(directory):
        yield from read_chunk(path)


class ChunkWriter:
    """Appends records to chunk files of `games_per_chunk` games; `append` returns once durable."""

    def __init__(self, directory: str | os.PathLike, games_per_chunk: int = 256):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.games_per_chunk = games_per_chunk
        existing = chunk_paths(self.directory)
        self._next_index = chunk_index(existing[-1]) + 1 if existing else 0
        self._file = None
        self.path: Path | None = None  # the chunk file the last record went to
        self._games_in_file = 0

    def append(self, record: GameRecord) -> None:
        """Writes one record and fsyncs it (and, for a new chunk, its directory entry)."""
        if self._file is None or self._games_in_file >= self.games_per_chunk:
            self._open_next()
        self._file.write(encode(record))
        self._file.flush()
        os.fsync(self._file.fileno())
        self._games_in_file += 1

    def _open_next(self) -> None:
        self.close()
        path = self.directory / f"chunk-{self._next_index:06d}.msgpack"
        self._next_index += 1
        self._file = open(path, "xb")
        self.path = path
        self._games_in_file = 0
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # the new file's name survives a crash too
        finally:
            os.close(dir_fd)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
