"""Chunk files on disk: damage found, quarantined or refused in one line, and the frozen corpus."""
from __future__ import annotations

import json
import os
import stat

import msgpack
import pytest
from replay_records import chess_record, make_record

from replay import chunks, shards
from replay.buffer import ReplayBuffer
from replay.config import ReplayConfig
from replay.record import RecordError, encode


def test_corrupt_chunk_on_reload_names_the_file(tmp_path):
    buf = ReplayBuffer(tmp_path, ReplayConfig(games_per_chunk=10), num_actions=9, max_legal_actions=9)
    for i in range(3):
        buf.add(encode(make_record(f"g{i}", 5, seed=i)))
    buf.close()
    path = chunks.chunk_paths(tmp_path)[0]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(RecordError, match="chunk-000000.msgpack"):  # strict: stop on damage
        ReplayBuffer(tmp_path, ReplayConfig(strict=True), num_actions=9, max_legal_actions=9)


def test_corpus_command_freezes_a_run_and_refuses_damage_with_one_line(tmp_path, capsys):
    from replay import corpus
    buf = ReplayBuffer(tmp_path / "run" / "replay", ReplayConfig(games_per_chunk=1), num_actions=4672,
                       max_legal_actions=218)
    for seed in range(2):
        buf.add(encode(chess_record(6, seed)[0]))
    buf.close()
    assert corpus.main([str(tmp_path / "run")]) == 0
    assert json.loads(capsys.readouterr().out) == {"corpus": str(tmp_path / "run" / "corpus"), "games": 2,
                                                   "positions": 12, "shards": 1}
    assert corpus.main([str(tmp_path / "run")]) == 2  # immutable: never written into again
    assert "not empty" in capsys.readouterr().err
    assert corpus.main([str(tmp_path / "nowhere")]) == 2
    assert "holds no replay chunks" in capsys.readouterr().err
    path = chunks.chunk_paths(tmp_path / "run" / "replay")[1]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert corpus.main([str(tmp_path / "run"), "--out", str(tmp_path / "c2")]) == 2
    err = capsys.readouterr().err
    assert "chunk-000001.msgpack" in err and "--resume" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "c2").exists()  # no half-written corpus left behind


def test_freeze_writes_an_immutable_corpus_with_fens(tmp_path):
    buf = ReplayBuffer(tmp_path / "replay", ReplayConfig(), num_actions=4672, max_legal_actions=218)
    recs = [chess_record(12, seed) for seed in range(2)]
    for rec, _ in recs:
        buf.add(encode(rec))
    manifest = buf.freeze(tmp_path / "corpus")
    assert manifest["games"] == 2 and manifest["positions"] == 24
    rows = []
    for shard in manifest["shards"]:
        path = tmp_path / "corpus" / shard["file"]
        assert not os.stat(path).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
        framed = [f.obj for f in shards.frames(path)]
        assert all(shards.is_frame(obj, shards.MAP_MAGIC) for obj in framed)  # each row with its CRC32
        rows += [shards.unpack_map(obj, str(path)) for obj in framed]
    assert json.loads((tmp_path / "corpus" / "manifest.json").read_text())["positions"] == 24
    for row in rows:
        rec, boards = recs[int(row["game"][1:])]
        board = boards[row["ply"]]
        assert row["fen"] == board.fen()  # python-chess is the reference
        assert sorted(row["moves"]) == sorted(m.uci() for m in board.legal_moves)
        assert row["history"] == [m.uci() for m in board.move_stack]
        assert len(row["policy"]) == len(row["child_q"]) == len(row["moves"])
        assert row["z"] == 0.0 and row["outcome"] == 0.5
    with pytest.raises(FileExistsError, match="immutable"):
        buf.freeze(tmp_path / "corpus")
    # distill/ reads the corpus as it reads its own shards
    from distill import records
    assert sum(1 for _ in records.iter_records(tmp_path / "corpus")) == 24


# -- damage on reload ------------------------------------------------------------------------------


def _chunk_with_games(tmp_path, n: int, per_chunk: int = 10):
    buf = ReplayBuffer(tmp_path, ReplayConfig(games_per_chunk=per_chunk), num_actions=9, max_legal_actions=9)
    for i in range(n):
        buf.add(encode(make_record(f"g{i}", 4 + i % 3, seed=i)))
    buf.close()
    return chunks.chunk_paths(tmp_path)


def _frame_offsets(path) -> list[int]:
    unpacker = msgpack.Unpacker(open(path, "rb"), raw=False)
    offsets = [0]
    for _ in unpacker:
        offsets.append(unpacker.tell())
    return offsets  # frame i spans offsets[i]:offsets[i + 1]


def _damage(path, at: int, n: int = 16) -> None:
    data = bytearray(path.read_bytes())
    for i in range(at, at + n):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def test_damaged_middle_frame_is_quarantined_and_intact_games_kept(tmp_path):
    path = _chunk_with_games(tmp_path, 5)[0]
    original = path.read_bytes()
    offsets = _frame_offsets(path)
    _damage(path, (offsets[2] + offsets[3]) // 2)  # 16 bytes flipped inside game g2's frame
    damaged = path.read_bytes()
    buf = ReplayBuffer(tmp_path, ReplayConfig(), num_actions=9, max_legal_actions=9)
    quarantined = tmp_path / "quarantine" / path.name
    assert buf.stats().games_quarantined == 1 and buf.quarantined == [str(quarantined)]
    assert quarantined.read_bytes() == damaged  # set aside as it was, never deleted
    # the file in place holds the intact frames before and after the damage, byte for byte
    assert path.read_bytes() == original[: offsets[2]] + original[offsets[3]:]
    assert [r.game_id for r in chunks.read_all(tmp_path)] == ["g0", "g1", "g3", "g4"]
    assert buf.stats().games_total == 4
    again = ReplayBuffer(tmp_path, ReplayConfig(), num_actions=9, max_legal_actions=9)  # now clean
    assert again.stats().games_quarantined == 0 and again.stats().games_total == 4


def test_damaged_frame_header_resyncs_at_the_next_frame(tmp_path):
    """Bytes flipped at a frame's start (its framing, not only its payload) lose that game only."""
    path = _chunk_with_games(tmp_path, 4)[0]
    offsets = _frame_offsets(path)
    _damage(path, offsets[1], 12)
    buf = ReplayBuffer(tmp_path, ReplayConfig(), num_actions=9, max_legal_actions=9)
    assert buf.stats().games_quarantined == 1
    assert [r.game_id for r in chunks.read_all(tmp_path)] == ["g0", "g2", "g3"]


def test_damage_in_every_frame_leaves_no_chunk_file(tmp_path):
    path = _chunk_with_games(tmp_path, 2)[0]
    offsets = _frame_offsets(path)
    for i in range(2):
        _damage(path, (offsets[i] + offsets[i + 1]) // 2, 4)
    buf = ReplayBuffer(tmp_path, ReplayConfig(), num_actions=9, max_legal_actions=9)
    assert buf.stats().games_quarantined == 2 and buf.stats().games_total == 0
    assert not path.exists() and (tmp_path / "quarantine" / path.name).exists()


def test_torn_last_frame_is_not_damage(tmp_path):
    path = _chunk_with_games(tmp_path, 3)[-1]
    with open(path, "ab") as f:
        f.write(encode(make_record("torn", 6))[:100])
    size = path.stat().st_size
    buf = ReplayBuffer(tmp_path, ReplayConfig(), num_actions=9, max_legal_actions=9)
    assert buf.stats().games_quarantined == 0 and buf.stats().games_total == 3
    assert not (tmp_path / "quarantine").exists() and path.stat().st_size == size  # left as it was


def test_strict_stops_at_damage_naming_file_frame_and_fix(tmp_path):
    path = _chunk_with_games(tmp_path, 5)[0]
    offsets = _frame_offsets(path)
    _damage(path, (offsets[2] + offsets[3]) // 2)
    with pytest.raises(RecordError) as info:
        ReplayBuffer(tmp_path, ReplayConfig(strict=True), num_actions=9, max_legal_actions=9)
    message = str(info.value)
    assert "chunk-000000.msgpack: frame 2" in message and "replay.strict" in message and "\n" not in message
    assert not (tmp_path / "quarantine").exists()  # strict touches nothing


def test_unknown_schema_is_not_quarantined(tmp_path):
    """A record of a newer schema is no damage: the reload stops (the file stays where it is)."""
    frame = msgpack.unpackb(encode(make_record("g1", 2)), raw=False)
    frame[1] = 99
    path = tmp_path / "chunk-000000.msgpack"
    path.write_bytes(msgpack.packb(frame, use_bin_type=True))
    with pytest.raises(RecordError, match="schema version 99"):
        ReplayBuffer(tmp_path, ReplayConfig(), num_actions=9, max_legal_actions=9)
    assert path.exists() and not (tmp_path / "quarantine").exists()

