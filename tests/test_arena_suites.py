"""Evaluation suites (arena/suites): puzzles played to the end of the line, any mate accepted,
EPD bm/am and STS points, band/theme aggregation, action accuracy / Kendall's tau, errors."""
import csv
import io
import json
from pathlib import Path

import chess
import pytest
from rich.console import Console

from arena.agents.agent import Agent, Limit
from arena.suites import (
    ActionRecord,
    ItemResult,
    Puzzle,
    Suite,
    action_metrics,
    build_report,
    evaluate_agent,
    load_suite,
    parse_points,
    rating_band,
    read_puzzles,
    render_table,
    run_suite,
    solve_puzzle,
)
from runtime.data import data_dir

PUZZLES = data_dir() / "puzzles" / "lichess_puzzles_themed.csv"
WAC = data_dir() / "epd" / "wac_revised_300.epd"
# back rank: Ra8# and Rb8# both mate (h2 pawn for a quiet alternative)
TWO_MATES = "7k/6pp/8/8/8/8/1R5P/R5K1 w - - 0 1"
ONE_MATE = "7k/6pp/8/8/8/8/7P/R5K1 w - - 0 1"  # Ra8# only


class Scripted(Agent):
    """Plays the given UCI moves in order, then repeats the last one."""

    def __init__(self, *moves: str):
        self.name, self.moves, self.i = "scripted", list(moves), 0

    def reset(self, game=None):
        self.i = 0

    def select(self, board, limit=None, stop=None):
        move = chess.Move.from_uci(self.moves[min(self.i, len(self.moves) - 1)])
        self.i += 1
        return move, {"nodes": 1}


def _subset_csv(tmp_path: Path, theme: str, n: int) -> Path:
    with open(PUZZLES, newline="") as f:
        reader = csv.DictReader(f)
        rows = [r for r in reader if theme in r["Themes"].split()][:n]
        fields = reader.fieldnames
    out = tmp_path / f"{theme}.csv"
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(rows)
    return out


def test_mate_in_two_stockfish_solves_all_random_almost_none(tmp_path):
    path = _subset_csv(tmp_path, "mateIn2", 10)
    sf = run_suite("stockfish:nodes=5000", path, workers=2, progress=False)
    rnd = run_suite("random:seed=1", path, progress=False)
    assert (sf.positions, sf.overall.solved, sf.errors) == (10, 10, 0)
    assert rnd.overall.solved / rnd.positions < 0.3
    # every solver move of each line was played: mate in 2 = two solver moves per puzzle
    assert all(len(r.played) == 2 for r in sf.items)
    mate2 = {g.name: g for g in sf.themes}["mateIn2"]
    assert (mate2.positions, mate2.solved) == (10, 10)
    assert sum(g.positions for g in sf.bands) == 10


def test_wac_stockfish_solves_random_does_not(tmp_path):
    wanted = {"WAC.001", "WAC.003", "WAC.004", "WAC.005", "WAC.006"}
    lines = [ln for ln in WAC.read_text().splitlines() if any(f'"{w}"' in ln for w in wanted)]
    path = tmp_path / "wac5.epd"
    path.write_text("\n".join(lines) + "\n")
    sf = run_suite("stockfish:nodes=20000", path, progress=False)
    rnd = run_suite("random:seed=3", path, progress=False)
    assert (sf.kind, sf.positions, sf.overall.solved) == ("epd", 5, 5)
    assert rnd.overall.solved <= 1


def test_any_mating_move_is_accepted_but_nothing_else():
    # setup move g8h8 by the opponent; the line's answer is Ra8#, Rb8# mates as well
    puzzle = Puzzle("two-mates", "6k1/6pp/8/8/8/8/1R5P/R5K1 b - - 0 1", ("g8h8", "a1a8"), 1000,
                    ("mate", "mateIn1"))
    board = chess.Board(puzzle.fen)
    board.push_uci("g8h8")
    for move, mates in (("a1a8", True), ("b2b8", True), ("b2b7", False), ("h2h3", False)):
        board.push_uci(move)
        assert board.is_checkmate() == mates  # the independent reference
        board.pop()
        assert solve_puzzle(Scripted(move), puzzle).solved == mates, move


def test_whole_line_is_required():
    # 00008: setup f2g3, solver e6e7, opponent b2b1, solver b3c1, opponent b1c1, solver h6c1
    puzzle = next(p for p in read_puzzles(PUZZLES, 5) if p.id == "00008")
    assert solve_puzzle(Scripted("e6e7", "b3c1", "h6c1"), puzzle).solved
    wrong = solve_puzzle(Scripted("e6e7", "h2h3"), puzzle)  # a legal, non-mating second move
    assert not wrong.solved and wrong.played == ("e6e7", "h2h3")
    illegal = solve_puzzle(Scripted("h1h3"), puzzle)
    assert not illegal.solved and illegal.error == "illegal move h1h3"


class Bare:
    """A duck-typed player as distill has: a name and select(board), no reset, no limit."""

    name = "bare"

    def select(self, board):
        return chess.Move.from_uci("h2h3"), {}


def test_sts_points_and_themes(tmp_path):
    path = tmp_path / "sts2.epd"
    path.write_text(
        f'{TWO_MATES[:-4]} bm Ra8+; id "STS(v1.0) Undermine.001"; c0 "Ra8=10, Rb8=10, h3=3";\n'
        f'{TWO_MATES[:-4]} bm Ra8+; id "STS(v2.2) Open Files and Diagonals.001"; '
        'c0 "Ra8=10, h4=4, h3=2";\n')
    suite = load_suite(path)
    assert suite.kind == "sts" and suite.items[1].points == (("a1a8", 10), ("h2h4", 4), ("h2h3", 2))
    quiet = evaluate_agent(Bare(), suite)
    assert (quiet.overall.score, quiet.overall.max_score, quiet.overall.solved) == (5, 20, 0)
    assert [(g.name, g.score, g.max_score) for g in quiet.themes] == [
        ("STS01 Undermine", 3, 10), ("STS02 Open Files and Diagonals", 2, 10)]
    assert quiet.agent == "bare"
    other_mate = evaluate_agent(Scripted("b2b8"), suite)  # 10 where listed, 0 where not
    assert (other_mate.overall.score, other_mate.overall.solved) == (10, 0)
    sf = run_suite("stockfish:nodes=2000", path, limit=1, progress=False)
    assert (sf.positions, sf.overall.score, sf.overall.max_score) == (1, 10, 10)
    real = load_suite("sts", limit=30)  # a limit takes every theme in turn
    assert real.kind == "sts" and len({p.theme for p in real.items}) == 15
    board = chess.Board("1kr5/3n4/q3p2p/p2n2p1/PppB1P2/5BP1/1P2Q2P/3R2K1 w - - 0 1")
    assert parse_points(board, "f5=10, Be5+=2") == (("f4f5", 10), ("d4e5", 2))
    assert parse_points(board, "J. Polgar-Berkes, Budapest 2003") is None


def test_band_and_theme_aggregation():
    assert [rating_band(r) for r in (399, 400, 799, 1375, 2000)] == [
        "0-399", "400-799", "400-799", "1200-1599", "2000-2399"]
    ratings = [799, 800, 1199, 1200, 1650]
    themes = [("fork",), ("fork", "mateIn1"), ("mateIn1",), (), ("fork",)]
    solved = [True, False, True, True, False]
    items = tuple(Puzzle(str(i), chess.STARTING_FEN, ("e2e4", "e7e5"), r, t)
                  for i, (r, t) in enumerate(zip(ratings, themes)))
    results = {i: ItemResult(str(i), s, ("e7e5",)) for i, s in enumerate(solved)}
    report = build_report(Suite("t", Path("t.csv"), "puzzles", items), results, agent="a",
                          spec="a", seconds=1.0, move_limit=Limit(nodes=7), limit=None, workers=1)
    assert (report.positions, report.overall.solved, report.accuracy) == (5, 3, 0.6)
    assert [(g.name, g.positions, g.solved) for g in report.bands] == [
        ("400-799", 1, 1), ("800-1199", 2, 1), ("1200-1599", 1, 1), ("1600-1999", 1, 0)]
    assert [(g.name, g.positions, g.solved) for g in report.themes] == [
        ("fork", 3, 1), ("mateIn1", 2, 1)]
    data = json.loads(report.to_json())
    assert data["accuracy"] == 0.6 and data["move_limit"]["nodes"] == 7
    assert data["bands"][1] == {"name": "800-1199", "positions": 2, "solved": 1, "accuracy": 0.5}
    assert len(data["items"]) == 5 and "items" not in json.loads(report.to_json(items=False))
    other = build_report(Suite("t", Path("t.csv"), "puzzles", items), {0: results[0]},
                         agent="b", spec="b", seconds=1.0, move_limit=None, limit=1, workers=1)
    out = io.StringIO()
    Console(file=out, width=120).print(render_table([report, other], puzzle_themes=1))
    text = out.getvalue()
    assert "60.0% (3/5)" in text and "100.0% (1/1)" in text and "theme fork" in text


def test_action_accuracy_and_kendall_tau(tmp_path):
    records = [
        {"fen": TWO_MATES, "moves": ["a1a8", "b2b8", "h2h3"], "values": [0.9, 0.5, 0.1]},
        ActionRecord("ties", TWO_MATES, ("a1a8", "b2b8", "h2h3"), (1.0, 1.0, 0.0)),
        {"fen": TWO_MATES, "moves": ["a1a8", "h2h3"], "values": [0.5, 0.5]},  # no order: no tau
    ]
    scores = {0: {"a1a8": 3, "b2b8": 1, "h2h3": 2}, 1: {"a1a8": 2, "b2b8": 5, "h2h3": 1},
              2: {"a1a8": 0, "h2h3": 1}}
    calls = iter(range(3))
    out = action_metrics(lambda board: scores[next(calls)], records)
    # board 0: pairs (a8,b8) and (a8,h3) concordant, (b8,h3) discordant -> tau = 1/3;
    # board 1: Rb8 ties the best value; its tau-b with one tied value pair is 2/sqrt(6)
    assert out["action_accuracy"] == 1.0 and (out["boards"], out["tau_boards"]) == (3, 2)
    assert out["kendall_tau"] == pytest.approx((1 / 3 + 2 / 6 ** 0.5) / 2)
    as_lists = action_metrics(lambda b: (list(scores[0]), list(scores[0].values())), records[:1])
    assert as_lists["kendall_tau"] == pytest.approx(1 / 3)
    board = chess.Board(ONE_MATE)  # a complete record: every legal move, only the mate is best
    moves = [m.uci() for m in board.legal_moves]
    path = tmp_path / "boards.jsonl"
    path.write_text(json.dumps({"fen": ONE_MATE, "moves": moves,
                                "values": [float(m == "a1a8") for m in moves]}) + "\n")
    with pytest.raises(ValueError, match="not the reference moves"):
        action_metrics(lambda board: {"a1a8": 1.0}, records[:1])
    sf = run_suite("stockfish:nodes=1000", path, progress=False)
    assert (sf.kind, sf.overall.solved, sf.items[0].played) == ("actions", 1, ("a1a8",))


def test_bad_suite_is_a_one_line_error(tmp_path, monkeypatch):
    for suite, fix in ((tmp_path / "nope.epd", "use one of puzzles, puzzles-10k, wac"),
                       ("wacc", "or a .csv/.epd/.jsonl path")):
        with pytest.raises(ValueError, match="no such suite or file") as e:
            run_suite("random", suite, progress=False)
        assert fix in str(e.value) and "\n" not in str(e.value)
    (tmp_path / "x.txt").write_text("hi")
    with pytest.raises(ValueError, match="not a .csv"):
        load_suite(tmp_path / "x.txt")
    monkeypatch.setenv("ZEROCHESS_DATA", str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="set ZEROCHESS_DATA.*download_data.sh") as e:
        load_suite("wac")
    assert "\n" not in str(e.value)


def test_match_cli_suite_mode_writes_one_report_per_agent_and_suite(tmp_path, capsys):
    import json

    import match

    assert match.main(["--suite", "wac,puzzles", "--limit", "3", "random", "random:seed=2,name=r2",
                       "--no-progress", "--out", str(tmp_path)]) == 0
    reports = json.loads((tmp_path / "suites.json").read_text())
    assert [(r["suite"], r["agent"]) for r in reports] == [
        ("wac", "random"), ("wac", "r2"), ("puzzles", "random"), ("puzzles", "r2")]
    assert all(r["positions"] == 3 for r in reports)
    assert match.main(["--suite", "wacc", "random"]) == 2
    assert "no such suite" in capsys.readouterr().err
