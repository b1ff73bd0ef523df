"""Games and matches: PGN validity, both colours per opening, adjudication, SPRT stopping, pool."""
import dataclasses
import fcntl
import io
import json

import chess
import chess.pgn
import pytest

from arena import Agent, make_agent
from arena.play.game import Adjudication, play_game
from arena.play.match import MatchConfig, run_match
from arena.play.openings import START, Book, Opening, pick
from arena.ratings.sprt import SprtConfig
from runtime.data import data_file

BOOK = str(data_file("openings", "8moves_v3.pgn"))
EPD_BOOK = str(data_file("openings", "2moves_v1.epd"))


def _games(path):
    games = []
    with open(path) as f:
        while (game := chess.pgn.read_game(f)) is not None:
            games.append(game)
    return games


def _check_game(game):
    """Replays a PGN game with python-chess and checks its Result against the final position."""
    assert not game.errors
    board = game.board()
    for move in game.mainline_moves():
        assert move in board.legal_moves
        board.push(move)
    result, termination = game.headers["Result"], game.headers["Termination"]
    outcome = board.outcome(claim_draw=True)
    if termination == "checkmate":
        assert board.is_checkmate() and result == ("0-1" if board.turn == chess.WHITE else "1-0")
    elif termination == "max plies":
        # The arena claims draws as pgx does: at 100 plies of the 50-move counter, not one move
        # early as python-chess's claim_draw=True allows.
        assert result == "1/2-1/2" and board.outcome(claim_draw=False) is None
        assert board.halfmove_clock < 100 and not board.is_repetition(3)
    else:
        assert outcome is not None and outcome.result() == result, termination
    assert int(game.headers["PlyCount"]) == len(board.move_stack)
    return board


def test_a_match_into_a_log_file_prints_a_plain_line_every_tenth_of_its_games(tmp_path, capsys):
    """stdout not a terminal (a log of a match in the background): no live bar, a plain progress line
    after every tenth of the games and after the last, with the standings so far."""
    cfg = MatchConfig(players=("random:seed=1,name=a", "random:seed=2,name=b"), games=20, book=BOOK,
                      rules=Adjudication(max_plies=30), json_path=str(tmp_path / "m.json"))
    summary = run_match(cfg, progress=True)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert [line.split(" games")[0] for line in lines] == [f"match: {n}/20" for n in range(2, 21, 2)]
    w, d, l = (summary["pairings"][0][k] for k in ("wins", "draws", "losses"))
    assert f": a vs b: +{w} ={d} -{l} Elo " in lines[-1]


def test_random_vs_random_from_the_book_writes_valid_pgn(tmp_path):
    cfg = MatchConfig(players=("random:seed=1", "random:seed=2,name=rnd2"), games=6, book=BOOK,
                      pgn_path=str(tmp_path / "m.pgn"), json_path=str(tmp_path / "m.json"))
    summary = run_match(cfg, progress=False)
    games = _games(tmp_path / "m.pgn")
    assert len(games) == 6 == summary["games_played"]
    expected = {o.moves for o in pick(Book(BOOK), 3, "random", seed=0)}  # the schedule's choice
    openings_seen = {}
    for game in games:
        board = _check_game(game)
        assert {game.headers["White"], game.headers["Black"]} == {"random:seed=1", "rnd2"}
        # The book line is the start of the game.
        first16 = [m.uci() for m in board.move_stack[:16]]
        openings_seen.setdefault(tuple(first16), []).append(game.headers["White"])
        assert tuple(first16) in expected
    # Three openings, each played once with each colour.
    assert len(openings_seen) == 3 and all(sorted(w) == ["random:seed=1", "rnd2"]
                                           for w in openings_seen.values())
    data = json.loads((tmp_path / "m.json").read_text())
    p = data["pairings"][0]
    assert p["wins"] + p["draws"] + p["losses"] == 6 == len(data["games"])
    assert sum(p["pentanomial"]) == 3
    assert {r["name"] for r in data["ratings"]["table"]} == {"random:seed=1", "rnd2"}


def test_a_second_match_on_a_pgn_being_written_stops_before_playing(tmp_path):
    # two matches appending to one PGN cannot be told apart afterwards: the second stops in one line
    pgn = tmp_path / "m.pgn"
    pgn.write_text("")
    cfg = MatchConfig(players=("random:seed=1", "random:seed=2"), games=2, book=BOOK, pgn_path=str(pgn))
    with open(pgn, "a") as held:  # another open file description: the lock of a match still playing
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(ValueError, match="another match that is still playing"):
            run_match(cfg, progress=False)
    assert pgn.read_text() == ""
    assert run_match(cfg, progress=False)["games_played"] == 2  # the lock went with its holder
    assert len(_games(pgn)) == 2


def test_ply_cap_and_epd_start(tmp_path):
    opening = Book(EPD_BOOK)[10]
    record = play_game(make_agent("random:seed=5"), make_agent("random:seed=6"), opening,
                       Adjudication(max_plies=20))
    game = chess.pgn.read_game(io.StringIO(record.pgn))
    assert game.headers["FEN"] == opening.fen and game.headers["SetUp"] == "1"
    board = _check_game(game)
    # these seeds play to the cap (a game over by the rules before it would fail here: pick others)
    assert record.termination == "max plies" and len(board.move_stack) == 20 and record.result == "1/2-1/2"


def test_fifty_move_draw_is_claimed_at_100_plies_not_one_move_early():
    """pgx ends the game when the counter reaches 100 plies; python-chess's claim_draw=True would
    claim at 99 when a quiet move is legal. The arena follows pgx, so the ply cap ends this game."""
    opening = Opening("8/8/8/4k3/8/8/8/R3K3 w - - 98 80", (), "kings and rook")
    capped = play_game(make_agent("random:seed=1"), make_agent("random:seed=2"), opening,
                       Adjudication(max_plies=1))
    board = _check_game(chess.pgn.read_game(io.StringIO(capped.pgn)))
    assert capped.termination == "max plies" and board.halfmove_clock == 99
    assert board.can_claim_fifty_moves()  # the look-ahead claim the arena does not make
    ended = play_game(make_agent("random:seed=1"), make_agent("random:seed=2"), opening,
                      Adjudication(max_plies=10))
    assert (ended.termination, ended.result) == ("50-move rule", "1/2-1/2")
    assert len(_check_game(chess.pgn.read_game(io.StringIO(ended.pgn))).move_stack) == 2


class _Illegal(Agent):
    name = "cheater"

    def select(self, board, limit=None, stop=None):
        return chess.Move.from_uci("e2e5"), {}


class _Crash(Agent):
    name = "crasher"

    def select(self, board, limit=None, stop=None):
        raise RuntimeError("boom")


class _Meddler(Agent):
    name = "meddler"

    def select(self, board, limit=None, stop=None):
        move = next(iter(board.legal_moves))
        board.push(move)  # moves on the shared board: not allowed
        return move, {}


def test_illegal_moves_and_crashes_lose_the_game():
    record = play_game(_Illegal(), make_agent("random"), START)
    assert record.result == "0-1" and "illegal move e2e5 by cheater" in record.termination
    record = play_game(make_agent("random:seed=1"), _Crash(), START)
    assert record.result == "1-0" and "crasher: RuntimeError: boom" in record.termination
    record = play_game(_Meddler(), make_agent("random"), START)
    assert record.result == "0-1" and "changed the board" in record.termination
    assert not chess.pgn.read_game(io.StringIO(record.pgn)).errors


class _Scripted(Agent):
    """Random legal moves, always reporting the same score for itself."""

    def __init__(self, name, score_cp):
        self.name, self.score_cp, self.random = name, score_cp, make_agent("random:seed=4")

    def select(self, board, limit=None, stop=None):
        return self.random.select(board)[0], {"score_cp": self.score_cp}


def test_resign_and_draw_adjudication_rules():
    rules = Adjudication(resign_cp=500, resign_moves=3)
    record = play_game(_Scripted("w", 700), _Scripted("b", -700), START, rules)
    assert (record.result, record.termination, record.plies) == ("1-0", "adjudication: resign", 6)
    record = play_game(_Scripted("w", -900), _Scripted("b", 900), START, rules)
    assert (record.result, record.plies) == ("0-1", 6)
    # The sides disagree (both think they are winning): no adjudication, the game goes on.
    record = play_game(_Scripted("w", 900), _Scripted("b", 900), START, Adjudication(
        max_plies=30, resign_cp=500, resign_moves=3))
    assert record.termination != "adjudication: resign"
    draw = Adjudication(draw_cp=20, draw_moves=4, draw_move_number=10)
    record = play_game(_Scripted("w", 5), _Scripted("b", -5), START, draw)
    game = chess.pgn.read_game(io.StringIO(record.pgn))
    assert (record.result, record.termination) == ("1/2-1/2", "adjudication: draw")
    # First chance: 8 scores in the window and move 10 reached, i.e. right after ply 18.
    assert record.plies == 18 and game.end().board().fullmove_number == 10
    # A score outside the window never triggers the draw rule.
    record = play_game(_Scripted("w", 50), _Scripted("b", -50), START,
                       dataclasses.replace(draw, max_plies=60))
    assert record.termination != "adjudication: draw"


def test_resign_adjudication_with_stockfish():
    with make_agent("stockfish:skill=20,nodes=2000") as strong, make_agent("stockfish:skill=0,nodes=1,name=weak") as weak:
        # Queen up for white: both engines agree quickly; white wins by adjudication.
        opening = type(START)("3qk3/8/8/8/8/8/8/Q2QK3 w - - 0 1", (), "queen odds")
        record = play_game(strong, weak, opening, Adjudication(resign_cp=600, resign_moves=2))
    # fixed node counts play the same game every time: adjudicated, not mated, after two moves each
    assert (record.result, record.termination, record.plies) == ("1-0", "adjudication: resign", 4)


@pytest.mark.slow
def test_sprt_stops_stockfish_vs_random_early(tmp_path):
    cfg = MatchConfig(players=("stockfish:skill=0,nodes=200", "random"), games=200, book=EPD_BOOK,
                      sprt=SprtConfig(elo0=0, elo1=200, alpha=0.05, beta=0.05),
                      pgn_path=str(tmp_path / "s.pgn"))
    summary = run_match(cfg, progress=False)
    sprt = summary["pairings"][0]["sprt"]
    assert summary["stopped"] == "sprt" and sprt["decision"] == "H1"
    assert summary["games_played"] <= 30  # decided long before the 200 games
    assert len(_games(tmp_path / "s.pgn")) == summary["games_played"]


@pytest.mark.slow
def test_round_robin_in_a_process_pool(tmp_path):
    players = ("random:seed=1", "stockfish:skill=0,nodes=100,name=sf", "random:seed=2,name=r2")
    cfg = MatchConfig(players=players, games=2, book=EPD_BOOK, order="sequential", workers=2,
                      pgn_path=str(tmp_path / "rr.pgn"), json_path=str(tmp_path / "rr.json"),
                      anchor="sf")
    summary = run_match(cfg, progress=False)
    games = _games(tmp_path / "rr.pgn")
    assert len(games) == 6 == summary["games_played"]  # 3 pairings x 2 games
    for game in games:
        _check_game(game)
    assert sorted(int(g.headers["Round"]) for g in games) == list(range(1, 7))
    ratings = summary["ratings"]
    assert ratings["anchor"] == "sf"
    table = {r["name"]: r for r in ratings["table"]}
    assert table["sf"]["rating"] == 0 and table["random:seed=1"]["rating"] < 0
    assert len(summary["pairings"]) == 3


@pytest.mark.slow
def test_a_pooled_match_plays_the_games_one_process_plays(tmp_path):
    """Seeded agents restart their random stream per game (Agent.reset), so which pool process
    plays a game, and what it played before, does not change the game."""
    players = ("random:seed=1", "random:seed=2,name=r2", "random:seed=3,name=r3")
    moves = {}
    for workers in (1, 2):
        cfg = MatchConfig(players=players, games=4, book=EPD_BOOK, order="sequential", workers=workers,
                          pgn_path=str(tmp_path / f"{workers}.pgn"))
        run_match(cfg, progress=False)
        moves[workers] = {int(g.headers["Round"]): [m.uci() for m in g.mainline_moves()]
                          for g in _games(tmp_path / f"{workers}.pgn")}
    assert sorted(moves[1]) == list(range(1, 13)) and moves[2] == moves[1]
    assert len({tuple(m) for m in moves[1].values()}) == 12  # and the games differ


def test_match_rejects_bad_configs():
    with pytest.raises(ValueError, match="at least two"):
        run_match(MatchConfig(players=("random",)), progress=False)
    with pytest.raises(ValueError, match="SPRT needs exactly two"):
        run_match(MatchConfig(players=("random", "random", "random"), sprt=SprtConfig()),
                  progress=False)
    with pytest.raises(ValueError, match="unknown agent"):
        run_match(MatchConfig(players=("random", "nonsense")), progress=False)


def test_match_config_from_yaml_flags_and_set(tmp_path, capsys):
    from pathlib import Path

    import match
    out = tmp_path / "m"
    preset = Path(__file__).resolve().parent.parent / "configs" / "match.yaml"
    argv = ["--config", str(preset), "random:seed=1", "random:seed=2", "--games", "4",
            "--set", "games=2", "book=null", "workers=1", "rules.max_plies=40", "--out", str(out),
            "--no-progress"]
    assert match.main(argv) == 0
    summary = json.loads((out / "results.json").read_text())
    assert summary["games_played"] == 2 and summary["config"]["rules"]["max_plies"] == 40
    assert summary["specs"] == ["random:seed=1", "random:seed=2"]  # positional specs replace players
    assert all(g["plies"] <= 40 for g in summary["games"])
    capsys.readouterr()
    for args, message in [(["--set", "order=diagonal"], "order: 'diagonal' is not one of"),
                          (["--set", "rules.max_ply=3"], "unknown config key 'rules.max_ply'"),
                          (["--set", "sprt.alpha=0.9"], "alpha"),
                          (["--movetime", "0"], "movetime_ms must be >= 1")]:
        assert match.main(["random", "random", "--no-progress", *args]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("field, value", [("max_plies", 0), ("resign_moves", 0), ("draw_moves", -1),
                                          ("resign_cp", -100), ("draw_cp", -5)])
def test_adjudication_rejects_nonsense_by_name(field, value):
    with pytest.raises(ValueError, match=f"rules.{field} must be"):
        Adjudication(**{field: value})
