"""Game records and the replay buffer: round trips, persistence, the window and sampling."""
from __future__ import annotations

import json
import sys
import zlib

import msgpack
import numpy as np
import pytest
from replay_records import make_record, varied_record

from games import packing
from replay import chunks
from replay.buffer import ReplayBuffer
from replay.config import ReplayConfig
from replay.record import GameRecord, RecordError, decode, encode


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


def test_a_schema_5_record_reads_as_self_play():
    """Schema 6 added the sparring partner; a v5 frame (built here by hand) has none."""
    rec = make_record("v5", 3, seed=4)
    body = msgpack.unpackb(msgpack.unpackb(encode(rec), raw=False)[3], raw=False)
    del body["partner"], body["partner_player"]
    payload = msgpack.packb(body, use_bin_type=True)
    back = decode(msgpack.packb(["zcgr", 5, zlib.crc32(payload), payload], use_bin_type=True))
    assert back.partner == "" and back.partner_player == -1 and back.plies == 3


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

