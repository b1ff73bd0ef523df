"""replay/shards.py, the one append-only shard writer/reader, through both of its users: replay's chunk
files of game records and distill's record shards (annotations, corpora) — round trips through files,
shards written before the checksum, a flipped byte, a torn tail, the fsync policy."""
from __future__ import annotations

import os
import stat

import msgpack
import pytest
from test_replay import make_record

from distill import records
from replay import chunks, shards
from replay.record import RecordError, encode


def _rec(i: int, game: str = "g#0") -> dict:
    return {"fen": f"fen{i}", "game": game, "ply": i, "moves": ["e2e4", "d2d4"],
            "values": [0.5, 0.25 + i / 1000], "value": 0.5}


def _flip(path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


# -- round trips -----------------------------------------------------------------------------------

def test_game_records_round_trip_through_chunk_files(tmp_path):
    writer = chunks.ChunkWriter(tmp_path, games_per_chunk=2)
    games = [make_record(f"g{i}", 3 + i, seed=i) for i in range(5)]
    assert writer.append_frames([encode(g) for g in games[:3]]) == [tmp_path / "chunk-000000.msgpack"] * 2 + [
        tmp_path / "chunk-000001.msgpack"]
    for g in games[3:]:
        writer.append(g)
    writer.close()
    assert [p.name for p in chunks.chunk_paths(tmp_path)] == [f"chunk-00000{i}.msgpack" for i in range(3)]
    back = list(chunks.read_all(tmp_path))
    assert [r.game_id for r in back] == [g.game_id for g in games]
    assert all((b.policy == g.policy).all() for b, g in zip(back, games))
    # on disk: each chunk is the records' frames back to back, byte for byte as `encode` made them
    assert b"".join(p.read_bytes() for p in chunks.chunk_paths(tmp_path)) == b"".join(encode(g) for g in games)
    # a second writer never appends to a chunk it did not create
    again = chunks.ChunkWriter(tmp_path, games_per_chunk=2)
    again.append(make_record("g5", 2))
    again.close()
    assert chunks.chunk_index(again.path) == 3 and len(list(chunks.read_chunk(again.path))) == 1


def test_distill_records_round_trip_framed_with_a_checksum_each(tmp_path):
    recs = [_rec(i, game=f"g#{i % 3}") for i in range(7)]
    with records.ShardWriter(tmp_path, shard_size=3) as writer:
        for rec in recs:
            writer.write(rec)
    assert [p.name for p in records.shard_paths(tmp_path)] == [f"shard-0000{i}.msgpack" for i in range(3)]
    for path in records.shard_paths(tmp_path):
        assert all(shards.is_frame(f.obj, shards.MAP_MAGIC) for f in shards.frames(path))
    assert list(records.iter_records(tmp_path)) == recs
    store = records.RecordStore(tmp_path)
    assert [store[i] for i in range(len(store))] == recs
    store.close()
    # a reopened writer fills the last shard (1 record) before starting a new one
    with records.ShardWriter(tmp_path, shard_size=3) as writer:
        for i in range(7, 10):
            writer.write(_rec(i))
    assert [len(list(shards.frames(p))) for p in records.shard_paths(tmp_path)] == [3, 3, 3, 1]
    assert [r["fen"] for r in records.iter_records(tmp_path)] == [f"fen{i}" for i in range(10)]


# -- shards written before the checksum ------------------------------------------------------------

def _old_shard(directory, recs) -> None:
    """A shard as the old distill/records.py wrote it: bare msgpack maps appended, and its index."""
    directory.mkdir(parents=True, exist_ok=True)
    blobs = [msgpack.packb(r, use_bin_type=True) for r in recs]
    (directory / "shard-00000.msgpack").write_bytes(b"".join(blobs))
    offsets = [sum(len(b) for b in blobs[:i]) for i in range(len(blobs))]
    index = {"shards": ["shard-00000.msgpack"], "sizes": [sum(len(b) for b in blobs)],
             "shard": [0] * len(recs), "offset": offsets, "length": [len(b) for b in blobs],
             "game": [r["game"] for r in recs], "full": [True] * len(recs)}
    (directory / records.INDEX_NAME).write_bytes(msgpack.packb(index, use_bin_type=True))


def test_an_old_bare_map_shard_and_its_index_still_read_and_take_new_records(tmp_path):
    old = [_rec(i) for i in range(3)]
    _old_shard(tmp_path, old)
    index_bytes = (tmp_path / records.INDEX_NAME).read_bytes()
    assert list(records.iter_records(tmp_path)) == old
    store = records.RecordStore(tmp_path)  # the old index is current: used as it is
    assert [store[i] for i in range(3)] == old
    store.close()
    assert (tmp_path / records.INDEX_NAME).read_bytes() == index_bytes
    assert records.build_index(tmp_path, write=False) == msgpack.unpackb(index_bytes, raw=False)
    # a resumed annotation appends framed records to the old shard, then starts a new one
    new = [_rec(i) for i in range(3, 6)]
    with records.ShardWriter(tmp_path, shard_size=5) as writer:
        for rec in new:
            writer.write(rec)
    kinds = [isinstance(f.obj, dict) for p in records.shard_paths(tmp_path) for f in shards.frames(p)]
    assert kinds == [True, True, True, False, False, False]  # 3 bare maps, then 2 + 1 frames
    assert list(records.iter_records(tmp_path)) == old + new
    store = records.RecordStore(tmp_path)  # the index is stale now: rebuilt over both kinds
    assert [store[i] for i in range(len(store))] == old + new
    store.close()


def test_a_corpus_frozen_before_the_checksum_still_reads(tmp_path):
    """A frozen corpus (manifest.json, read-only) of bare maps and no index: read, never written into."""
    rows = [{**_rec(i), "source": "selfplay"} for i in range(4)]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "shard-00000.msgpack").write_bytes(b"".join(msgpack.packb(r, use_bin_type=True) for r in rows))
    (corpus / "manifest.json").write_text("{}")
    os.chmod(corpus / "shard-00000.msgpack", stat.S_IRUSR)
    store = records.RecordStore(corpus)
    assert [store[i] for i in range(4)] == rows
    store.close()
    assert sorted(p.name for p in corpus.iterdir()) == ["manifest.json", "shard-00000.msgpack"]


# -- damage ----------------------------------------------------------------------------------------

def test_a_flipped_byte_in_a_distill_record_names_the_shard_and_the_frame(tmp_path):
    with records.ShardWriter(tmp_path) as writer:
        for i in range(3):
            writer.write(_rec(i))
    records.RecordStore(tmp_path).close()  # index.msgpack written while the shard was whole
    path = records.shard_paths(tmp_path)[0]
    spans = [(f.start, f.end) for f in shards.frames(path)]
    _flip(path, (spans[1][0] + spans[1][1]) // 2)  # inside record 1's payload
    with pytest.raises(ValueError, match=r"shard-00000\.msgpack: frame 1: checksum mismatch"):
        list(records.iter_records(tmp_path))
    with pytest.raises(ValueError, match=r"shard-00000\.msgpack: frame 1: checksum mismatch"):
        records.build_index(tmp_path, write=False)
    store = records.RecordStore(tmp_path)  # same size: the index is taken; the record is checked on read
    assert store[0] == _rec(0) and store[2] == _rec(2)
    with pytest.raises(ValueError, match=r"shard-00000\.msgpack: record 1 .*checksum mismatch"):
        store[1]
    store.close()


def test_a_flipped_byte_in_a_game_record_names_the_chunk_and_the_frame(tmp_path):
    writer = chunks.ChunkWriter(tmp_path)
    writer.append_frames([encode(make_record(f"g{i}", 4, seed=i)) for i in range(3)])
    writer.close()
    path = chunks.chunk_paths(tmp_path)[0]
    spans = [(f.start, f.end) for f in shards.frames(path)]
    _flip(path, (spans[2][0] + spans[2][1]) // 2)
    with pytest.raises(RecordError, match=r"chunk-000000\.msgpack: frame 2: checksum mismatch"):
        list(chunks.read_chunk(path))


def test_the_writer_refuses_to_cut_off_records_after_damage(tmp_path):
    """The old writer truncated a shard at the first undecodable byte, losing every record after it;
    damage that is no torn tail is an error naming the shard, and the file is left as it is."""
    with records.ShardWriter(tmp_path) as writer:
        for i in range(3):
            writer.write(_rec(i))
    path = records.shard_paths(tmp_path)[0]
    start = [f.start for f in shards.frames(path)][1]
    data = bytearray(path.read_bytes())
    data[start] = 0xC1  # never used by msgpack: frame 1 is no msgpack at all
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"shard-00000\.msgpack: frame 1 is corrupt"):
        records.ShardWriter(tmp_path)
    assert path.read_bytes() == bytes(data)


# -- a torn tail (a writer killed mid-record) ------------------------------------------------------

def test_a_torn_distill_tail_is_read_up_to_and_trimmed_by_the_next_writer(tmp_path):
    with records.ShardWriter(tmp_path) as writer:
        for i in range(3):
            writer.write(_rec(i))
    path = records.shard_paths(tmp_path)[0]
    spans = [(f.start, f.end) for f in shards.frames(path)]
    with open(path, "r+b") as f:
        f.truncate((spans[2][0] + spans[2][1]) // 2)  # record 2 cut in half
    assert list(records.iter_records(tmp_path)) == [_rec(0), _rec(1)]
    store = records.RecordStore(tmp_path)
    assert len(store) == 2 and store[1] == _rec(1)
    store.close()
    writer = records.ShardWriter(tmp_path)
    assert path.stat().st_size == spans[1][1]  # the torn half record is gone
    writer.write(_rec(9))
    writer.close()
    assert list(records.iter_records(tmp_path)) == [_rec(0), _rec(1), _rec(9)]


def test_a_torn_chunk_tail_is_read_up_to_and_left_alone(tmp_path):
    writer = chunks.ChunkWriter(tmp_path)
    writer.append_frames([encode(make_record(f"g{i}", 4, seed=i)) for i in range(3)])
    writer.close()
    path = chunks.chunk_paths(tmp_path)[0]
    with open(path, "ab") as f:
        f.write(encode(make_record("torn", 5))[:70])
    size = path.stat().st_size
    assert [r.game_id for r in chunks.read_chunk(path)] == ["g0", "g1", "g2"]
    writer = chunks.ChunkWriter(tmp_path)
    writer.append(make_record("g3", 2))
    writer.close()
    assert path.stat().st_size == size and writer.path.name == "chunk-000001.msgpack"


# -- durability ------------------------------------------------------------------------------------

def test_append_fsyncs_each_file_once_and_the_directory_of_a_new_one(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    writer = shards.FrameWriter(tmp_path, shards.RECORD_SHARDS, per_shard=2)
    writer.append([shards.pack_map(_rec(i)) for i in range(3)])  # 2 + 1 frames: two new files
    assert synced == ["dir", "file", "dir", "file"]
    synced.clear()
    writer.append([shards.pack_map(_rec(3))])  # fills the second file
    writer.close()
    assert synced == ["file"]
    synced.clear()
    with records.ShardWriter(tmp_path / "d") as distill_writer:  # distill: every record on its own
        for i in range(2):
            distill_writer.write(_rec(i))
    assert synced == ["dir", "file", "file"]
