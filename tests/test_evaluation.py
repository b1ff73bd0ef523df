"""The in-run evaluator: batched gauntlet games (colours, scores, legal replays against python-chess
and a perfect tic-tac-toe reference), ratings recovered from simulated gauntlets, and a tic-tac-toe
run whose raw-policy rating rises and whose ratings.csv survives a resume."""
from __future__ import annotations

import csv
import functools
import subprocess
import sys
from pathlib import Path

import chess
import jax
import numpy as np
import pytest

import games
from arena import gauntlet
from arena.agents.spec import make_agent
from arena.batched.board_players import board_mover, parse_player, tic_tac_toe_value
from arena.ratings.bayeselo import GameResult, fit_ratings
from games import chess_bridge

ROOT = Path(__file__).resolve().parents[1]
LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
OPENINGS = ["rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
            "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"]


@functools.lru_cache(maxsize=None)
def reference_value(mine: frozenset, theirs: frozenset) -> int:
    """Negamax of tic-tac-toe written independently of arena/batched/board_players.py."""
    if any(all(c in theirs for c in line) for line in LINES):
        return -1
    empty = [c for c in range(9) if c not in mine | theirs]
    return max((-reference_value(theirs, mine | {c}) for c in empty), default=0)


def test_minimax_player_matches_the_reference():
    rng = np.random.default_rng(0)
    for _ in range(200):
        cells = rng.permutation(9)[:rng.integers(0, 7)]
        mine, theirs = frozenset(cells[1::2].tolist()), frozenset(cells[0::2].tolist())
        assert tic_tac_toe_value(mine, theirs) == reference_value(mine, theirs)
    with pytest.raises(ValueError, match="known: alphabeta:depth=N"):
        parse_player("connect_four", "minimax")


def test_the_ladder_is_the_games_own_unless_engines_name_one():
    """Each game's default opponents come from the game (games/ladders.py), checked as that game's
    kind of spec (chess: arena agents; the stone games: board players)."""
    from games import ladders
    from selfplay.evaluation.opponents import ladder
    assert ladder("connect_four", None) == ("alphabeta:depth=2", "alphabeta:depth=4")
    assert ladder("tic_tac_toe", None) == ("minimax",) and ladder("go_9x9", None) == ()
    assert ladder("chess", None) == ("stockfish:skill=0,depth=1",) and ladders.ladder("chess").fen_uci
    assert ladder("connect_four", ("alphabeta:depth=6",)) == ("alphabeta:depth=6",)
    import games
    assert all(games.SPECS[g].ladder == ladders.ladder(g) for g in games.SPECS)  # the game carries its ladder
    with pytest.raises(ValueError, match="known: alphabeta:depth=N"):
        ladder("connect_four", ("minimax",))


def test_movers_pair_one_network_move_per_start():
    to_move = np.array([0, 0, 1, 1])
    network_player = np.array([0, 1, 1, 0])
    net, opp = gauntlet._movers(to_move, network_player, np.zeros(4, bool))
    assert net.tolist() == [0, 2] and opp.tolist() == [1, 3]
    # a pair whose first game ended: the live game's mover is whoever is to move there
    net, opp = gauntlet._movers(np.array([0, 0]), np.array([0, 1]), np.array([True, False]))
    assert (net.tolist(), opp.tolist()) == ([0], [1])
    net, opp = gauntlet._movers(np.array([0, 1]), np.array([0, 1]), np.array([True, False]))
    assert (net.tolist(), opp.tolist()) == ([1], [0])


def test_perfect_play_draws_itself_and_beats_random_in_both_colours():
    game = games.make("tic_tac_toe")
    starts = gauntlet.start_states(game, 8, jax.random.PRNGKey(0))
    perfect = board_mover("tic_tac_toe", "minimax", seed=1)
    mirror = gauntlet.play_gauntlet(game, perfect, board_mover("tic_tac_toe", "minimax", seed=2), starts,
                                    jax.random.PRNGKey(1))
    assert [g.score for g in mirror] == [0.5] * 16
    assert all(g.plies == 9 for g in mirror)  # perfect play fills the board
    played = gauntlet.play_gauntlet(game, perfect, gauntlet.random_mover, starts, jax.random.PRNGKey(2))
    assert [g.network_first for g in played] == [True, False] * 8
    assert min(g.score for g in played) >= 0.5  # never loses
    assert np.mean([g.score for g in played]) > 0.8
    for g in played:  # the recorded moves replay to the recorded result, seen from the network's side
        board, mover = [0] * 9, 1
        for a in g.actions:
            assert board[a] == 0
            board[a] = mover
            mover = 3 - mover
        net = 1 if g.network_first else 2
        won = {m for m in (1, 2) if any(all(board[c] == m for c in line) for line in LINES)}
        assert g.score == (1.0 if won == {net} else 0.0 if won else 0.5)


def test_chess_gauntlet_replays_legally_and_stockfish_beats_random():
    """Two gauntlets with one Stockfish mover (the evaluator plays the searched network, then the raw
    policy, against the same engine): every game of both replays legally in python-chess."""
    game = games.make("chess")
    boards = [chess.Board(fen) for fen in OPENINGS]
    fens = [b.fen() for b in boards for _ in (0, 1)]
    starts = gauntlet.start_states(game, 2, None, boards=boards)
    with make_agent("stockfish:depth=1") as stockfish:
        mover = gauntlet.AgentMover(stockfish, fens)
        played = [g for seed in (0, 1) for g in gauntlet.play_gauntlet(
            game, gauntlet.random_mover, mover, starts, jax.random.PRNGKey(seed), max_plies=200)]
    assert len(played) == 8 and [g.start for g in played] == [0, 0, 1, 1] * 2
    assert played[:4] != played[4:]  # the random side played other games the second time
    for g in played:
        board = chess_bridge.actions_to_board(g.actions, fens[2 * g.start])  # raises on an illegal move
        if g.termination == "rules":
            outcome = board.outcome(claim_draw=True)
            assert outcome is not None, board.fen()
            random_colour = board.root().turn if g.network_first else not board.root().turn
            expected = 0.5 if outcome.winner is None else float(outcome.winner == random_colour)
            assert g.score == expected
        else:
            assert g.plies == 200 and g.score == 0.5
    assert np.mean([g.score for g in played]) <= 0.25  # the random mover is the one losing


def test_ratings_recovered_from_a_simulated_evaluation_schedule():
    """Networks of rising strength each meet random, the previous network and a fixed engine, as
    the evaluator schedules them; the fit anchored at random recovers every true rating."""
    truth = {"random": 0.0, "step-0": 40.0, "step-1000": 250.0, "step-2000": 420.0, "step-3000": 560.0,
             "engine": 700.0}
    rng = np.random.default_rng(3)
    f = lambda d: 1 / (1 + 10 ** (-d / 400))  # noqa: E731
    results = []
    nets = [n for n in truth if n.startswith("step-")]
    for i, net in enumerate(nets):
        for opponent in ["random", "engine"] + nets[max(0, i - 1):i]:
            for k in range(40):
                white, black = (net, opponent) if k % 2 == 0 else (opponent, net)
                d = truth[white] - truth[black] + 32.8
                p_win, p_loss, u = f(d - 97.3), f(-d - 97.3), rng.random()
                results.append(GameResult(white, black, 1.0 if u < p_win else 0.0 if u < p_win + p_loss else 0.5))
    fit = fit_ratings(results, anchor="random")
    rated = {p.name: p for p in fit.players}
    for name, elo in truth.items():
        assert rated[name].lower <= elo <= rated[name].upper, (name, rated[name])
    assert [rated[n].rating for n in nets] == sorted(rated[n].rating for n in nets)


def _run(tmp_path, *overrides: str, resume: bool = False) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(ROOT / "selfplay.py"), "--config", str(ROOT / "configs/tic_tac_toe.yaml"),
           "--no-progress", *(["--resume"] if resume else []), "--set", f"runs_dir={tmp_path}", "--set", "name=ttt_eval",
           # a weak search at first, so the untrained network starts near random
           "--set", "search.num_simulations=4", "--set", "search.win_check=none",
           "--set", "evaluation.every_steps=300", "--set", "evaluation.openings=30"]
    for o in overrides:
        cmd += ["--set", o]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def _ratings(run_dir: Path) -> list[dict]:
    with open(run_dir / "eval" / "ratings.csv") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_tic_tac_toe_run_rates_its_networks_and_resumes_the_curve(tmp_path):
    run_dir = tmp_path / "ttt_eval"
    first_run = _run(tmp_path, "learner.max_steps=600")
    # step 600's evaluation is asked for as the run stops: it waits for it, and says so
    assert "evaluating before the run ends (the network of step 600 is saved; Ctrl-C skips this)" in first_run.stderr
    rows = _ratings(run_dir)
    steps = [int(r["step"]) for r in rows]
    assert len(rows) >= 2 and steps[0] == 0 and steps[-1] == 600, steps
    first, last = rows[0], rows[-1]
    # the raw policy learned, beyond the interval; the search (which looks for forced wins at every
    # node, so the untrained one already scores ~80% against random) did not get worse
    assert float(last["policy_elo"]) > float(first["policy_elo_upper"]), rows
    assert float(last["elo_upper"]) > float(first["elo"]), rows
    # the raw policy is rated beside the search, against the fixed anchors only
    with open(run_dir / "eval" / "games.csv") as f:
        policy_games = [g for g in csv.DictReader(f) if "policy-step-600" in (g["white"], g["black"])]
    opponents = {g["black"] if g["white"] == "policy-step-600" else g["white"] for g in policy_games}
    assert opponents == {"random", "minimax"}, opponents
    assert (run_dir / "eval" / "progress.png").stat().st_size > 10_000
    assert any((run_dir / "eval" / "networks" / "step-600").iterdir())  # kept for arena's net=
    games_before = sum(1 for _ in open(run_dir / "eval" / "games.csv"))

    _run(tmp_path, "learner.max_steps=700", resume=True)
    resumed = _ratings(run_dir)
    steps = [int(r["step"]) for r in resumed]
    assert resumed[:len(rows)] == rows  # appended, the earlier rows untouched
    assert steps == sorted(set(steps)) and steps[-1] == 700, steps  # no step twice
    assert float(resumed[-1]["hours"]) > float(rows[-1]["hours"])  # the run's clock carried over
    assert sum(1 for _ in open(run_dir / "eval" / "games.csv")) > games_before


def test_anchor_labels_join_anchors_rated_alike():
    """The progress picture labels each fixed opponent once; anchors the fit rates alike (alpha-beta
    depths 2 and 4 both at +569 in a connect-four run) share one line instead of overprinting."""
    from arena.ratings.bayeselo import PlayerRating
    from selfplay.evaluation.plot import anchor_labels
    rated = lambda name, r: PlayerRating(name, r, r - 100, r + 100, 100, 0.5)
    players = [rated("step-1000", 560.0), rated("policy-step-1000", 300.0), rated("random", 0.0), rated("alphabeta:depth=4", 568.5),
               rated("alphabeta:depth=2", 569.2), rated("alphabeta:depth=6", 820.0)]
    assert anchor_labels(players) == [(568.5, ["alphabeta:depth=4", "alphabeta:depth=2"]),
                                      (820.0, ["alphabeta:depth=6"])]


def test_ratings_csv_of_an_older_version_gains_the_new_columns_on_append(tmp_path):
    """A run resumed across the version that added the raw policy's columns: the old rows keep their
    values under the right headers (a plain append would misalign every later column)."""
    from selfplay.evaluation.store import RATINGS_FIELDS, append_csv, read_reports, report_row
    from selfplay.messages import EvalReport
    old_fields = RATINGS_FIELDS[:12]
    path = tmp_path / "ratings.csv"
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=old_fields)
        writer.writeheader()
        writer.writerow({"step": 0, "hours": 0.0, "positions": 0, "games": 0, "loss": "", "elo": 228.0,
                         "elo_lower": 74.0, "elo_upper": 382.0, "score_vs_random": 0.8, "mates_search": 0.52,
                         "mates_policy": 0.0, "seconds": 72.0})
    new = EvalReport(step=461, hours=0.1, positions=59021, games=421, loss=2.9, elo=165.0, elo_lower=58.0,
                     elo_upper=272.0, score_vs_random=0.7, mates_search=0.5, mates_policy=0.02, seconds=59.0,
                     policy_elo=-20.0, policy_elo_lower=-120.0, policy_elo_upper=80.0, policy_score_vs_random=0.45,
                     mate_puzzles=200, policy_mate_puzzles=1000)
    append_csv(path, RATINGS_FIELDS, [report_row(new)])
    old, again = read_reports(path)
    assert (old.step, old.elo, old.mates_policy, old.seconds, old.policy_elo, old.mate_puzzles) == (
        0, 228.0, 0.0, 72.0, None, None)
    assert again == new
    with open(path) as f:
        assert next(csv.reader(f)) == list(RATINGS_FIELDS)


def test_the_evaluator_searches_a_network_as_the_arena_plays_it(tmp_path):
    """The in-run Elo rates the search that `mcts:net=eval/networks/step-N` plays: the evaluator's
    SearchConfig equals the arena agent's, built from the metadata the evaluator saved with the
    network, for a self-play search unlike play in every field for_play sets (noise, sampling, tree
    reuse, root-only forced results)."""
    from arena.agents.network import search_config
    from configs.loader import load
    from models import network_dir
    from selfplay.config import SelfPlayConfig
    from selfplay.evaluation import Evaluator
    from selfplay.messages import EvalRequest
    cfg = load(SelfPlayConfig, ROOT / "configs/tic_tac_toe.yaml", [
        "search.root_noise=true", "search.temperature_plies=4", "search.reuse_tree=true", "search.win_check=root",
        "search.policy=gumbel", "search.gumbel_scale=1.0", "evaluation.openings=2", "evaluation.engines=[]",
        "evaluation.previous_networks=0"])
    evaluator = Evaluator(str(tmp_path), cfg)
    game = games.make("tic_tac_toe")
    variables = evaluator.net.init(jax.random.PRNGKey(0), game.observe(game.init(jax.random.split(jax.random.PRNGKey(0), 1))),
                                   train=False)
    report = evaluator.evaluate(EvalRequest(step=5, hours=0.0, positions=0, games=0, variables=variables))
    assert report is not None and report.step == 5
    saved = network_dir.load(tmp_path / "eval" / "networks" / "step-5")
    played = search_config(saved.metadata)
    assert played == evaluator.search_cfg
    assert (played.root_noise, played.gumbel_scale, played.temperature_plies, played.reuse_tree, played.win_check) \
        == (False, 0.0, 0, False, "tree")
    assert (played.policy, played.num_simulations) == (cfg.search.policy, cfg.search.num_simulations)
