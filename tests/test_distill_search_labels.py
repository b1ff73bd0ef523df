"""Search labels as distill records: the teacher's play search over each board's legal moves (the
rules' moves, python-chess's), a known mate found, a forced move's whole mass, the input's game and
outcome kept, a resumed job equal to one run, and one line for a wrong input."""
import chess
import numpy as np
import pytest

from distill import search_labels
from distill.records import ShardWriter, build_index, iter_records

NET = "networks/chess_distilled_4x64"
FOOL = "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2"  # black mates: Qh4#
ONE_MOVE = "7k/8/8/8/8/8/6q1/7K w - - 0 1"  # white's one move: Kxg2
QUEEN_HANGS = "rnb1kbnr/pppp1ppp/8/4p3/4P2q/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
FENS = [FOOL, ONE_MOVE, QUEEN_HANGS, chess.STARTING_FEN]


@pytest.fixture(scope="module")
def searcher():
    return search_labels._Searcher(NET, simulations=8, win_check="root", batch_size=4)


def _input(tmp_path):
    with ShardWriter(tmp_path / "in") as w:
        for i, fen in enumerate(FENS):
            moves = [m.uci() for m in chess.Board(fen).legal_moves]
            w.write({"fen": fen, "game": f"g{i}", "ply": i, "moves": moves, "values": [0.5] * len(moves),
                     "value": 0.5, "outcome": i / 4})
    build_index(tmp_path / "in")
    return search_labels.SearchLabels(str(tmp_path / "in"), NET, simulations=8)


def test_each_board_holds_the_searchs_distribution_over_the_rules_moves(tmp_path, searcher):
    job = _input(tmp_path)
    search_labels.generate(tmp_path / "out", job, boards=10, searcher=searcher, show_progress=False)
    recs = {r["fen"]: r for r in iter_records(tmp_path / "out")}
    assert sorted(recs) == sorted(FENS)
    for i, fen in enumerate(FENS):
        rec = recs[fen]
        assert rec["moves"] == [m.uci() for m in chess.Board(fen).legal_moves]
        assert (rec["game"], rec["ply"], rec["outcome"], rec["source"]) == (f"g{i}", i, i / 4, "search")
        assert sum(rec["policy"]) == pytest.approx(1.0) and min(rec["policy"]) >= 0
        assert all(np.isnan(rec["values"])) and 0 <= rec["value"] <= 1
    assert recs[FOOL]["best"] == "d8h4" and recs[FOOL]["value"] == pytest.approx(1.0)  # the mate, proven
    assert recs[ONE_MOVE]["policy"] == [1.0] and recs[ONE_MOVE]["best"] == "h1g2"
    for fen in (QUEEN_HANGS, chess.STARTING_FEN):  # PUCT plays its most visited move
        rec = recs[fen]
        assert rec["policy"][rec["moves"].index(rec["best"])] == max(rec["policy"])  # (ties: either)
    assert sum(p > 0 for p in recs[chess.STARTING_FEN]["policy"]) > 1  # visits, not one move
    assert recs[QUEEN_HANGS]["best"] == "f3h4"  # the free queen, as this network's search plays it


def test_a_resumed_job_writes_what_one_run_writes(tmp_path, searcher):
    job = _input(tmp_path)
    search_labels.generate(tmp_path / "once", job, boards=4, searcher=searcher, show_progress=False)
    search_labels.generate(tmp_path / "twice", job, boards=1, searcher=searcher, show_progress=False)
    second = search_labels.generate(tmp_path / "twice", job, boards=4, searcher=searcher, show_progress=False)
    assert second["resumed_after"] == 1 and second["records"] == 4
    once, twice = list(iter_records(tmp_path / "once")), list(iter_records(tmp_path / "twice"))
    assert [r["fen"] for r in once] == [r["fen"] for r in twice]
    assert [r["best"] for r in once] == [r["best"] for r in twice]
    other = search_labels.SearchLabels(job.records, NET, simulations=16)
    with pytest.raises(FileExistsError, match="other records"):
        search_labels.generate(tmp_path / "twice", other, boards=5, searcher=searcher, show_progress=False)


def test_a_missing_record_directory_is_one_line(tmp_path, capsys):
    code = search_labels.main([str(tmp_path / "out"), "--records", str(tmp_path / "missing"),
                               "--teacher", NET, "--boards", "3"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("search_labels: ") and "\n" not in err and "missing" in err
