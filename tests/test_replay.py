"""Game records, chunk files, the replay buffer (persistence, window, sampling) and the frozen corpus."""
from __future__ import annotations

import json
import os
import stat
import sys
import zlib

import chess
import msgpack
import numpy as np
import pytest

from games import chess_bridge, packing
from replay import chunks, shards
from replay.buffer import ReplayBuffer
from replay.config import ReplayConfig
from replay.record import GameRecord, RecordError, compress_observation, decode, encode


def make_record(game_id: str, plies: int, seed: int = 0, num_actions: int = 9, width: int = 5) -> GameRecord:
    """A synthetic game: `width` legal moves per position, obs [3, 3, 2] bool."""
    rng = np.random.default_rng(seed)
    legal = np.full(plies, width, np.int16)
    legal_actions = np.concatenate([np.sort(rng.choice(num_actions, width, replace=False)) for _ in range(plies)])
    policy = rng.dirichlet(np.ones(width), size=plies).reshape(-1).astype(np.float32)
    obs = [rng.random((3, 3, 2)) < 0.3 for _ in range(plies)]
    return GameRecord(
        game="tic_tac_toe", game_id=game_id, init_key=np.array([seed, 7], np.uint32),
        actions=legal_actions.reshape(plies, width)[:, 0].astype(np.int32),
        observations=[compress_observation(o) for o in obs], obs_shape=(3, 3, 2), obs_dtype="bool",
        to_play=(np.arange(plies) % 2).astype(np.int8), num_legal=legal, legal_actions=legal_actions.astype(np.int32),
        policy=policy, child_q=rng.uniform(-1, 1, plies * width).astype(np.float32),
        root_value=rng.uniform(-1, 1, plies).astype(np.float32), rewards=np.array([1.0, -1.0], np.float32),
        termination="rules", resign_disabled=True, resign_would_have=1,
        param_versions=np.array([3, 5]), created=123.5)


def test_record_round_trip_is_exact():
    rec = make_record("g1", 7, seed=1)
    back = decode(encode(rec))
    for f in ("game", "game_id", "obs_shape", "obs_dtype", "termination", "resign_disabled", "resign_would_have", "created"):
        assert getattr(back, f) == getattr(rec, f)
    for f in ("init_key", "actions", "to_play", "num_legal", "legal_actions", "policy", "child_q", "root_value",
              "rewards", "param_versions"):
        np.testing.assert_array_equal(getattr(back, f), getattr(rec, f))
    for t in range(7):
        np.testing.assert_array_equal(back.observation(t), rec.observation(t))
    # z from the outcome: player 0 won, positions alternate 0, 1, 0, ...
    np.testing.assert_array_equal(back.outcome(), [1, -1, 1, -1, 1, -1, 1])
    assert back.plies == 7 and not back.resigned
    assert not back.resign_false_positive()  # player 1 would have resigned and did lose


def test_flipped_byte_is_detected_with_a_clear_error():
    data = bytearray(encode(make_record("g1", 5)))
    data[len(data) // 2] ^= 0x01
    with pytest.raises(RecordError, match="checksum"):
        decode(bytes(data))
    with pytest.raises(RecordError, match="not decodable|not a zerochess"):
        decode(b"\x93garbage")


def test_unknown_schema_version_is_refused():
    frame = msgpack.unpackb(encode(make_record("g1", 2)), raw=False)
    frame[1] = 99
    with pytest.raises(RecordError, match="schema version 99"):
        decode(msgpack.packb(frame, use_bin_type=True))


def test_schema_v1_record_still_decodes():
    """Schema 1 named the legal-move count `legal`; a v1 frame (built here by hand) reads as a current one."""
    rec = make_record("old", 4, seed=3)
    body = msgpack.unpackb(msgpack.unpackb(encode(rec), raw=False)[3], raw=False)
    body["legal"] = body.pop("num_legal")
    payload = msgpack.packb(body, use_bin_type=True)
    v1 = msgpack.packb(["zcgr", 1, zlib.crc32(payload), payload], use_bin_type=True)
    back = decode(v1)
    np.testing.assert_array_equal(back.num_legal, rec.num_legal)
    np.testing.assert_array_equal(back.policy, rec.policy)
    assert back.game_id == "old" and back.plies == 4


@pytest.mark.parametrize("version", [3, 4])
def test_older_records_with_full_search_decode_and_ignore_it(version):
    """Schemas 3 and 4 carried `full_search` per ply (playout cap randomization, since retired): such a
    frame (built here by hand) reads as a current record, the field ignored."""
    rec = make_record("pcr", 6, seed=2)
    body = msgpack.unpackb(msgpack.unpackb(encode(rec), raw=False)[3], raw=False)
    body["full_search"] = np.array([1, 0, 0, 1, 0, 1], bool).tobytes()
    if version < 4:
        body.pop("obs_encoding")
    payload = msgpack.packb(body, use_bin_type=True)
    back = decode(msgpack.packb(["zcgr", version, zlib.crc32(payload), payload], use_bin_type=True))
    assert not hasattr(back, "full_search") and back.plies == 6 and back.obs_encoding == "zlib"
    np.testing.assert_array_equal(back.policy, rec.policy)
    np.testing.assert_array_equal(back.observation(5), rec.observation(5))


def test_buffer_persists_every_acknowledged_game_and_reloads(tmp_path):
    cfg = ReplayConfig(window_positions=1000, games_per_chunk=3)
    buf = ReplayBuffer(tmp_path, cfg, num_actions=9, max_legal_actions=9)
    ids = [f"g{i}" for i in range(8)]
    for i, gid in enumerate(ids):
        ack = buf.add(encode(make_record(gid, 4 + i, seed=i)))
    assert ack == {"games_total": 8, "positions_total": sum(4 + i for i in range(8))}
    # No close(): like a killed process. A torn frame at the end (written, never acknowledged):
    last = chunks.chunk_paths(tmp_path)[-1]
    with open(last, "ab") as f:
        f.write(encode(make_record("torn", 6))[:40])
    assert len(chunks.chunk_paths(tmp_path)) == 3  # 3 + 3 + 2 games
    again = ReplayBuffer(tmp_path, cfg, num_actions=9, max_legal_actions=9)
    assert [r.game_id for r in chunks.read_all(tmp_path)] == ids
    assert again.stats().games_total == 8 and again.size() == sum(4 + i for i in range(8))
    again.add(encode(make_record("g8", 3)))  # a new chunk; the torn file is left alone
    assert [r.game_id for r in chunks.read_all(tmp_path)] == ids + ["g8"]


def test_closed_buffer_refuses_games_and_its_totals_match_the_disk(tmp_path):
    """The run's summary takes its totals from close(): a game an actor finishes after it is refused
    (unacknowledged), so the totals count exactly the games on disk."""
    buf = ReplayBuffer(tmp_path, ReplayConfig(games_per_chunk=2), num_actions=9, max_legal_actions=9)
    for i in range(3):
        buf.add(encode(make_record(f"g{i}", 4, seed=i)))
    final = buf.close()
    with pytest.raises(RuntimeError, match="closed"):
        buf.add(encode(make_record("late", 4)))
    on_disk = list(chunks.read_all(tmp_path))
    assert (final.games_total, final.positions_total) == (len(on_disk), sum(r.plies for r in on_disk)) == (3, 12)


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


def test_buffer_holds_the_window_and_no_more_in_positions_and_bytes(tmp_path):
    """Long games (100 plies) through a 500-position window: after it fills, it holds at least 500 and
    fewer than 500 + one game's positions, its arrays stop growing, and the buffer's memory does not
    grow with the games that passed through (only the last RECENT_GAMES records are kept whole; it
    kept 200, ~3 MB here, ~60 MB of chess)."""
    import gc
    import tracemalloc

    from replay.buffer import RECENT_GAMES
    buf = ReplayBuffer(tmp_path, ReplayConfig(window_positions=500, games_per_chunk=50), num_actions=9,
                       max_legal_actions=9)
    frames = lambda first: [encode(make_record(f"g{i}", 100, seed=i)) for i in range(first, first + 5)]
    for first in range(0, 20, 5):
        buf.add_many(frames(first))
    window_bytes = buf.stats().window_bytes
    record_bytes = sys.getsizeof(make_record("x", 100).observations[0]) * 100 + 100 * 5 * 3 * 4
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for first in range(20, 320, 5):
            buf.add_many(frames(first))
            s = buf.stats()
            assert 500 <= s.window_positions < 600 and s.window_games == 5
            assert s.window_bytes == window_bytes  # the rings keep their size once the window is full
        gc.collect()  # a full collection empties CPython's free lists (a record's 20-field tuples sit there)
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grown < 4 * RECENT_GAMES * record_bytes, (grown, record_bytes)
    assert buf.stats().mean_game_length == 100.0 and len(buf.recent_games(10)) == RECENT_GAMES


def test_window_is_bounded_by_positions_and_evicts_oldest_games(tmp_path):
    buf = ReplayBuffer(tmp_path, ReplayConfig(window_positions=20), num_actions=9, max_legal_actions=9)
    for i in range(10):
        buf.add(encode(make_record(f"g{i}", 5, seed=i)))
    s = buf.stats()
    assert s.games_total == 10 and s.positions_total == 50
    assert s.window_games == 4 and buf.size() == 20  # the last 4 games only
    batch = buf.sample(400, seed=0)
    kept = [make_record(f"g{i}", 5, seed=i) for i in range(6, 10)]
    firsts = {int(r.legal_actions[5 * t]) for r in kept for t in range(5)}
    assert set(batch.legal_actions[:, 0].tolist()) <= firsts
    # Reload keeps the same window.
    again = ReplayBuffer(tmp_path, ReplayConfig(window_positions=20), num_actions=9, max_legal_actions=9)
    assert again.stats().window_games == 4


def test_disk_positions_prunes_old_chunks_and_keeps_totals_across_reload(tmp_path):
    cfg = ReplayConfig(window_positions=10, games_per_chunk=2, disk_positions=12)
    buf = ReplayBuffer(tmp_path, cfg, num_actions=9, max_legal_actions=9)
    for i in range(20):
        buf.add(encode(make_record(f"g{i}", 5, seed=i)))  # 2 games (10 positions) per chunk file
    live = chunks.chunk_paths(tmp_path)
    # The newest files keep >= 12 positions: the current chunk (10) and the one before it (10).
    assert [chunks.chunk_index(p) for p in live] == [8, 9]
    assert [r.game_id for r in chunks.read_all(tmp_path)] == [f"g{i}" for i in range(16, 20)]
    s = buf.stats()
    assert (s.games_total, s.positions_total, s.first_player_wins) == (20, 100, 20)
    again = ReplayBuffer(tmp_path, cfg, num_actions=9, max_legal_actions=9)
    s2 = again.stats()
    assert (s2.games_total, s2.positions_total, s2.first_player_wins) == (20, 100, 20)
    assert (s2.no_resign_games, s2.resign_false_positives) == (s.no_resign_games, s.resign_false_positives)
    assert again.size() == 10 and again.reloaded_games == 20


def test_chunk_pruned_just_before_a_crash_is_not_counted_twice(tmp_path):
    cfg = ReplayConfig(window_positions=10, games_per_chunk=2, disk_positions=12)
    buf = ReplayBuffer(tmp_path, cfg, num_actions=9, max_legal_actions=9)
    for i in range(6):
        buf.add(encode(make_record(f"g{i}", 5, seed=i)))
    assert [chunks.chunk_index(p) for p in chunks.chunk_paths(tmp_path)] == [1, 2]
    # A crash after pruned.json said chunk 1 is gone but before the file was deleted:
    pruned = json.loads((tmp_path / "pruned.json").read_text())
    pruned.update(through=1, games=pruned["games"] + 2, positions=pruned["positions"] + 10)
    (tmp_path / "pruned.json").write_text(json.dumps(pruned))
    again = ReplayBuffer(tmp_path, cfg, num_actions=9, max_legal_actions=9)
    assert [chunks.chunk_index(p) for p in chunks.chunk_paths(tmp_path)] == [2]
    assert again.stats().games_total == 6 and again.stats().positions_total == 30


def test_disk_positions_zero_keeps_every_game(tmp_path):
    buf = ReplayBuffer(tmp_path, ReplayConfig(window_positions=10, games_per_chunk=2), num_actions=9,
                       max_legal_actions=9)
    for i in range(20):
        buf.add(encode(make_record(f"g{i}", 5, seed=i)))
    assert len(list(chunks.read_all(tmp_path))) == 20 and not (tmp_path / "pruned.json").exists()


def test_sample_matches_the_stored_positions(tmp_path):
    buf = ReplayBuffer(tmp_path, ReplayConfig(), num_actions=9, max_legal_actions=9)
    rec = make_record("only", 6, seed=4)
    buf.add(encode(rec))
    batch = buf.sample(64, seed=1, unpack=True)
    assert batch.observation.shape == (64, 3, 3, 2) and batch.observation.dtype == bool
    assert batch.legal_actions.shape == (64, 9) and batch.policy.shape == (64, 9)
    drawn = set()
    for b in range(64):
        t = next(t for t in range(6) if np.array_equal(rec.observation(t), batch.observation[b]))
        drawn.add(t)
        np.testing.assert_array_equal(batch.legal_actions[b, :5], rec.legal_actions[5 * t: 5 * t + 5])
        assert np.all(batch.legal_actions[b, 5:] == -1)
        np.testing.assert_allclose(batch.policy[b, :5], rec.policy[5 * t: 5 * t + 5])
        assert batch.z[b] == (1.0 if t % 2 == 0 else -1.0)
        assert batch.q[b] == rec.root_value[t]  # the search's root value of that very position
    assert drawn == set(range(6))  # uniform over the window: every position comes up


def chess_record(num_plies: int, seed: int) -> tuple[GameRecord, list[chess.Board]]:
    """A random legal chess game as a record (pgx actions via the bridge), and the boards."""
    rng = np.random.default_rng(seed)
    board = chess.Board()
    actions, legal_counts, legal_actions, boards = [], [], [], []
    for _ in range(num_plies):
        boards.append(board.copy())
        moves = list(board.legal_moves)
        ids = sorted(chess_bridge.move_to_pgx_action(m, board.turn == chess.WHITE) for m in moves)
        legal_counts.append(len(ids))
        legal_actions.extend(ids)
        move = moves[rng.integers(len(moves))]
        actions.append(chess_bridge.move_to_pgx_action(move, board.turn == chess.WHITE))
        board.push(move)
    n = len(legal_actions)
    rec = GameRecord(
        game="chess", game_id=f"c{seed}", init_key=np.zeros(2, np.uint32), actions=np.array(actions, np.int32),
        observations=[compress_observation(np.zeros((8, 8, 119), np.float32))] * num_plies,
        obs_shape=(8, 8, 119), obs_dtype="float32", to_play=(np.arange(num_plies) % 2).astype(np.int8),
        num_legal=np.array(legal_counts, np.int16), legal_actions=np.array(legal_actions, np.int32),
        policy=np.full(n, 0.05, np.float32), child_q=np.zeros(n, np.float32),
        root_value=np.zeros(num_plies, np.float32), rewards=np.zeros(2, np.float32), termination="cap",
        resign_disabled=False, resign_would_have=-1, param_versions=np.array([0, 0]), created=0.0)
    return rec, boards


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


def varied_record(game_id: str, plies: int, seed: int, float_obs: bool = False, dtype: str = "bool") -> GameRecord:
    """A synthetic game whose positions have 1-9 legal moves each; obs [3, 3, 2] 0/1 of `dtype`
    (packable) or, with `float_obs`, float32 planes of several values each (not packable)."""
    rng = np.random.default_rng(seed)
    legal = rng.integers(1, 10, plies).astype(np.int16)
    legal_actions = np.concatenate([np.sort(rng.choice(9, n, replace=False)) for n in legal]).astype(np.int32)
    policy = np.concatenate([rng.dirichlet(np.ones(n)) for n in legal]).astype(np.float32)
    if float_obs:
        obs, dtype = [rng.random((3, 3, 2)).astype(np.float32) for _ in range(plies)], "float32"
    else:
        obs = [(rng.random((3, 3, 2)) < 0.4).astype(dtype) for _ in range(plies)]
    return GameRecord(
        game="tic_tac_toe", game_id=game_id, init_key=np.array([seed, 1], np.uint32),
        actions=np.zeros(plies, np.int32), observations=[compress_observation(o) for o in obs],
        obs_shape=(3, 3, 2), obs_dtype=dtype, to_play=(np.arange(plies) % 2).astype(np.int8), num_legal=legal,
        legal_actions=legal_actions, policy=policy, child_q=np.zeros(len(policy), np.float32),
        root_value=rng.uniform(-1, 1, plies).astype(np.float32),
        rewards=np.array([1.0, -1.0] if seed % 3 else [0.0, 0.0], np.float32), termination="rules",
        resign_disabled=False, resign_would_have=-1, param_versions=np.array([0, 0]), created=0.0)


def reference_sample(records: list[GameRecord], window_positions: int, batch: int, seed: int) -> dict:
    """The window's promise computed directly from the records: keep whole games, oldest out while the
    rest hold `window_positions`; draw positions uniformly (oldest first) with default_rng(seed)."""
    kept: list[GameRecord] = []
    for r in records:
        kept.append(r)
        while len(kept) > 1 and sum(g.plies for g in kept) - kept[0].plies >= window_positions:
            kept.pop(0)
    where = [(g, t) for g in kept for t in range(g.plies)]
    flat = np.random.default_rng(seed).integers(0, len(where), size=batch)
    out = {"obs": [], "legal": np.full((batch, 9), -1), "policy": np.zeros((batch, 9)), "z": [], "q": []}
    for b, i in enumerate(flat):
        g, t = where[i]
        lo, hi = g.offsets()[t], g.offsets()[t + 1]
        out["obs"].append(g.observation(t))
        out["legal"][b, : hi - lo] = g.legal_actions[lo:hi]
        out["policy"][b, : hi - lo] = g.policy[lo:hi]
        out["z"].append(g.outcome()[t])
        out["q"].append(g.root_value[t])
    out["positions"] = len(where)
    return out


@pytest.mark.parametrize("float_from", [None, 150])
def test_window_samples_exactly_the_positions_a_direct_computation_draws(tmp_path, float_from):
    """~300 games of 1-30 plies through a 200-position window: the ring arrays wrap and grow many
    times; every sample equals a direct computation from the records. With `float_from`, a game whose
    observations do not pack switches the window to raw observations midway."""
    rng = np.random.default_rng(0)
    dtype = "bool" if float_from is None else "float32"
    records = [varied_record(f"g{i}", int(rng.integers(1, 31)), seed=i, dtype=dtype,
                             float_obs=float_from is not None and i >= float_from) for i in range(300)]
    buf = ReplayBuffer(tmp_path, ReplayConfig(window_positions=200), num_actions=9, max_legal_actions=9)
    for i, r in enumerate(records):
        buf.add(encode(r))
        if i % 37 == 36 or i == len(records) - 1:
            want = reference_sample(records[: i + 1], 200, 64, seed=i)
            got = buf.sample(64, seed=i, unpack=True)
            assert buf.size() == want["positions"]
            np.testing.assert_array_equal(got.observation, np.stack(want["obs"]))
            np.testing.assert_array_equal(got.legal_actions, want["legal"])
            np.testing.assert_array_equal(got.policy, want["policy"].astype(np.float32))
            np.testing.assert_array_equal(got.z, want["z"])
            np.testing.assert_array_equal(got.q, want["q"])
    packed = buf.sample(8, seed=1)
    if float_from is None:  # what the learner gets: packed, and exactly the unpacked sample
        assert isinstance(packed.observation, packing.PackedObservation)
        np.testing.assert_array_equal(packing.unpack(packed.observation, (3, 3, 2), dtype),
                                      buf.sample(8, seed=1, unpack=True).observation)
    else:
        assert packed.observation.dtype == np.float32 and packed.observation.shape == (8, 3, 3, 2)
    # memory: the window holds < 200 + 30 positions; its arrays at most a few times that
    assert 200 <= buf.size() < 230 and buf.stats().window_bytes < 40 * 1024 + 8 * 230 * (9 * 8 + 64)
