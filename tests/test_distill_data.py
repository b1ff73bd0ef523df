"""distill data layer: win% formula, value bins, samplers, record shards (hand-computed references).

The value bins are checked by hand on the numpy reference (tests/reference_bins.py), and the
library's JAX bins (games/winprob.py) against that reference."""

import json

import chess
import chess.engine
import numpy as np
import pytest

import reference_bins as bins
from distill import boards, records
from games import winprob


def test_win_prob_matches_hand_computed_values():
    # 50% * 2 / (1 + exp(-0.00368208 * cp)), computed by hand: exp(-0.368208) = 0.691973...
    assert winprob.cp_to_win_prob(0) == 0.5
    assert winprob.cp_to_win_prob(100) == pytest.approx(1 / (1 + 0.691973), abs=1e-6)
    assert winprob.cp_to_win_prob(100) == pytest.approx(0.5910259, abs=1e-6)
    assert winprob.cp_to_win_prob(-300) == pytest.approx(0.2488745, abs=1e-6)
    assert winprob.cp_to_win_prob(1000) + winprob.cp_to_win_prob(-1000) == pytest.approx(1.0)
    assert winprob.cp_to_win_prob(-10**7) == 0.0


def test_scores_and_mates_to_win_prob():
    assert winprob.score_to_win_prob(chess.engine.Cp(100)) == pytest.approx(0.5910259, abs=1e-6)
    assert winprob.score_to_win_prob(chess.engine.Mate(3)) == 1.0
    assert winprob.score_to_win_prob(chess.engine.Mate(-2)) == 0.0
    assert winprob.score_to_win_prob(chess.engine.Mate(0)) == 0.0  # side to move is mated
    pov = chess.engine.PovScore(chess.engine.Cp(-300), chess.WHITE)
    assert winprob.score_to_win_prob(pov.pov(chess.BLACK)) == pytest.approx(1 - 0.2488745, abs=1e-6)


def test_bins_by_hand():
    assert bins.value_to_bin(0.5, 128) == 64
    assert bins.value_to_bin(0.0, 128) == 0
    assert bins.value_to_bin(1.0, 128) == 127  # the last bin includes 1.0
    assert bins.value_to_bin(1 / 128, 128) == 1 and bins.value_to_bin(0.0078, 128) == 0
    np.testing.assert_array_equal(bins.value_to_bin(np.array([0.1, 0.3, 0.74, 0.76]), 4), [0, 1, 2, 3])
    np.testing.assert_allclose(bins.bin_centers(4), [0.125, 0.375, 0.625, 0.875])
    assert bins.bin_centers(128)[0] == pytest.approx(0.5 / 128)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        bins.value_to_bin(1.5, 128)


def test_targets_one_hot_and_hl_gauss():
    t = bins.one_hot_targets(np.array([0.3, 0.9]), 4)
    np.testing.assert_array_equal(t, [[0, 1, 0, 0], [0, 0, 0, 1]])
    h = bins.hl_gauss_targets(np.array([0.5]), 10, sigma_bins=0.75)
    assert h.shape == (1, 10) and h.sum() == pytest.approx(1.0, abs=1e-6)
    # symmetric around 0.5: bins 4 and 5 hold equal, largest mass
    assert h[0, 4] == pytest.approx(h[0, 5]) and h[0, 4] == h.max()
    # the expected value of the one-hot target is the bin centre
    assert bins.expected_value(t)[0] == pytest.approx(0.375)


def test_library_bins_match_the_reference():
    p = np.array([0.0, 0.003, 0.1, 0.3, 0.5, 0.74, 0.76, 0.9999, 1.0])
    for k in (4, 16, 128):
        np.testing.assert_array_equal(winprob.value_to_bin(p, k), bins.value_to_bin(p, k))
        np.testing.assert_allclose(winprob.bin_centers(k), bins.bin_centers(k), atol=1e-7)
        np.testing.assert_array_equal(winprob.bin_targets(p, k, "ce"), bins.one_hot_targets(p, k))
        np.testing.assert_allclose(winprob.bin_targets(p, k, "hl_gauss"), bins.hl_gauss_targets(p, k),
                                   atol=1e-5)
        probs = np.random.default_rng(k).dirichlet(np.ones(k), size=3)
        np.testing.assert_allclose(winprob.expected_bin_value(np.log(probs)), bins.expected_value(probs),
                                   atol=1e-6)


PGN = """[Event "a"]

1. e4 e5 2. Nf3 Nc6 1-0

[Event "b"]

1. e4 e5 2. Nf3 Nf6 0-1

[Event "c"]

1. f3 e5 2. g4 Qh4# 0-1
"""


def test_unique_sampler_removes_duplicates_and_weighted_counts(tmp_path):
    path = tmp_path / "g.pgn"
    path.write_text(PGN)
    all_fens = []
    for gid, game in boards.read_games([path]):
        all_fens += [gb.fen for gb in boards.game_boards(gid, game)]
    # a: 5 boards; b: 5 (4 shared with a); c: 4 (start shared; the final mate has no legal move)
    assert len(all_fens) == 14 and len(set(all_fens)) == 5 + 1 + 3
    unique = boards.sample_boards([path], "unique", seed=1)
    assert sorted(gb.fen for gb in unique) == sorted(set(all_fens))
    assert all(gb.count == 1 for gb in unique)
    weighted = boards.sample_boards([path], "weighted", seed=1)
    counts = {gb.fen: gb.count for gb in weighted}
    assert counts[chess.STARTING_FEN] == 3 and sum(counts.values()) == 14
    assert len(boards.sample_boards([path], "unique", max_boards=4)) == 4
    with pytest.raises(ValueError, match="sampler"):
        boards.sample_boards([path], "bogus")
    with pytest.raises(FileNotFoundError):
        boards.sample_boards([tmp_path / "missing.pgn"])


PUZZLES = """PuzzleId,FEN,Moves,Rating,Themes
p1,6k1/5ppp/8/8/8/8/5PPP/3R2K1 b - - 0 1,g8f8 d1d8,600,mateIn1
p2,r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR b KQkq - 3 3,g8f6 f3f7,700,mateIn1
"""


def test_epd_positions_and_puzzle_lines_are_units_and_evaluation_puzzles_stay_out(tmp_path):
    epd = tmp_path / "book.epd"
    epd.write_text("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - hmvc 0; fmvn 1;\n\n"
                   "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3\n")  # full FENs too
    csv_path = tmp_path / "puzzles.csv"
    csv_path.write_text(PUZZLES)
    units = dict(boards.read_units([epd, csv_path]))
    assert [len(b) for b in units.values()] == [1, 1, 1, 1]
    assert units["book.epd#0"][0].fen == "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    assert units["book.epd#2"][0].fen.endswith(" w KQkq - 2 3")
    # a puzzle's boards: after the opponent's setup move, before each solution move (python-chess replay)
    b = chess.Board("6k1/5ppp/8/8/8/8/5PPP/3R2K1 b - - 0 1")
    b.push_uci("g8f8")
    assert units["puzzles.csv#p1"][0].fen == b.fen() and units["puzzles.csv#p1"][0].game == "puzzles.csv#p1"
    kept = boards.sample_boards([epd, csv_path], exclude_puzzles=boards.puzzle_ids(csv_path) - {"p2"})
    assert sorted(gb.game for gb in kept) == ["book.epd#0", "book.epd#2", "puzzles.csv#p2"]
    (tmp_path / "bad.epd").write_text("not a position\n")
    with pytest.raises(ValueError, match="bad.epd line 1"):
        list(boards.read_units([tmp_path / "bad.epd"]))
    (tmp_path / "games.csv").write_text("white,black\n")
    with pytest.raises(ValueError, match="not a Lichess puzzle CSV"):
        list(boards.read_units([tmp_path / "games.csv"]))
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(ValueError, match="unknown kind"):
        list(boards.read_units([tmp_path / "x.txt"]))


def _rec(i, game="g#0"):
    return {"fen": f"fen{i}", "game": game, "ply": i, "moves": ["e2e4", "d2d4"],
            "values": [0.5, 0.25 + i / 1000], "value": 0.5}


def test_shards_index_random_access_and_torn_tail(tmp_path):
    with records.ShardWriter(tmp_path, shard_size=3) as w:
        for i in range(7):
            w.write(_rec(i, game=f"g#{i % 4}"))
    assert len(records.shard_paths(tmp_path)) == 3
    store = records.RecordStore(tmp_path)
    assert len(store) == 7 and store[5]["fen"] == "fen5" and store[5]["values"][1] == 0.255
    test = store.split("test", 0.5)
    train = store.split("train", 0.5)
    assert sorted(np.concatenate([test, train]).tolist()) == list(range(7))
    games_test = {store[i]["game"] for i in test}
    assert games_test.isdisjoint({store[i]["game"] for i in train})  # split by game
    store.close()
    # a killed writer leaves half a record: readers skip it, the next writer trims it and appends
    last = records.shard_paths(tmp_path)[-1]
    with open(last, "ab") as f:
        f.write(b"\x8a\xa3fen")
    assert len(list(records.iter_records(tmp_path))) == 7
    with records.ShardWriter(tmp_path, shard_size=3) as w:
        w.write(_rec(7))
    store = records.RecordStore(tmp_path)  # index is stale -> rebuilt
    assert [store[i]["fen"] for i in range(len(store))] == [f"fen{i}" for i in range(8)]


def test_bad_records_and_missing_dirs_raise_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="shard"):
        records.RecordStore(tmp_path / "nope")
    with records.ShardWriter(tmp_path) as w:
        with pytest.raises(ValueError, match="missing field"):
            w.write({"fen": "x"})
        with pytest.raises(ValueError, match="equal length"):
            w.write({**_rec(0), "values": [0.5]})


@pytest.mark.parametrize("args, message", [
    (["train", "--set", "train.bogus=1"], "unknown config key 'train.bogus'"),
    (["evaluate", "--set", "evaluate.net=/nonexistent/run"], "no student network directory"),
    (["train", "--set", "train.loss=mse"], "train.loss: 'mse' is not one of"),
    (["annotate", "--set", "annotate.pgn=[nope.pgn]"], "nope.pgn not found"),
])
def test_cli_errors_are_one_line(args, message, capsys):
    """In this process (distill.py's main); the first case also through the real entry point."""
    import importlib.util
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("distill_cli", root / "distill.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    if args[-1] == "train.bogus=1":
        proc = subprocess.run([sys.executable, str(root / "distill.py"), *args], cwd=root,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and proc.stderr == err, proc.stderr


def test_a_union_of_record_directories_reads_as_their_concatenation(tmp_path, capsys):
    """`python -m distill.union OUT A B`: links, not copies, to every shard of A then B; the store
    over OUT reads A's records then B's, each in the same split as in its source; a rerun after a
    source grew relinks; a directory with shards of its own, a source without shards or named twice
    is refused with one line, and nothing is overwritten."""
    from distill import union

    def write(d, first, n, shard_size):
        with records.ShardWriter(d, shard_size=shard_size) as w:
            for i in range(first, first + n):
                w.write(_rec(i, game=f"{d.name}#{i % 5}"))

    a, b, out = tmp_path / "a", tmp_path / "b", tmp_path / "union"
    write(a, 0, 7, 3)
    write(b, 100, 4, 10)
    assert union.link_records(out, [a, b]) == {"out": str(out), "shards": 4, "records": 11}
    assert all(p.is_symlink() for p in records.shard_paths(out))
    store = records.RecordStore(out)
    fens = [store[i]["fen"] for i in range(len(store))]
    assert fens == [r["fen"] for d in (a, b) for r in records.iter_records(d)]
    for i in range(len(store)):
        rec = store[i]
        assert records.split_of(rec["game"], 0.3) == ("test" if i in store.split("test", 0.3) else "train")
    store.close()

    write(b, 104, 2, 10)  # a source grows: the rerun sees it whole
    union.main([str(out), str(a), str(b)])
    assert json.loads(capsys.readouterr().out)["records"] == 13

    cases = [([str(out), str(a), str(a)], "named twice"), ([str(out), str(tmp_path / "empty")], "no record shards"),
             ([str(out), str(out)], "cannot be one of its sources"), ([str(b), str(a)], "of its own")]
    for argv, message in cases:
        with pytest.raises(SystemExit) as exit_:
            union.main(argv)
        assert message in str(exit_.value) and "\n" not in str(exit_.value)
    assert len(list(records.iter_records(b))) == 6  # the refused union left the source as it was
