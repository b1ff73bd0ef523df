"""The probe set (arena/batched/probe.py): its file, its replayed states and its figures against hand-computed cases."""
from __future__ import annotations

from pathlib import Path

import chess
import jax.numpy as jnp
import numpy as np
import pytest

from arena import probe as probe_lib
from arena.batched.probe import ProbePosition, ProbeSet
from games import chess_bridge

START = chess.STARTING_FEN


def _position(history: list[str], values: dict[str, float]) -> ProbePosition:
    board = chess.Board()
    for uci in history:
        board.push_uci(uci)
    legal = [m.uci() for m in board.legal_moves]
    moves = tuple(legal)
    return ProbePosition("hand@%d" % len(history), board.fen(), moves,
                         tuple(values.get(m, 0.1) for m in moves), START, tuple(history))


@pytest.fixture(scope="module")
def hand():
    # 1. e4 e5 2. Nf3: black's best d6 (0.5), Nc6 as good (0.5: a tie), everything else 0.1
    a = _position(["e2e4", "e7e5", "g1f3"], {"d7d6": 0.5, "b8c6": 0.5})
    # start: white's best e4 (0.6), the rest 0.1
    b = _position([], {"e2e4": 0.6})
    return ProbeSet([a, b])


def _action(probe: ProbeSet, row: int, uci: str) -> int:
    p = probe.positions[row]
    return int(probe.actions[row, p.moves.index(uci)])


def test_agreement_and_regret_by_hand(hand):
    # a: Nc6 (tied best: agrees, regret 0); b: a3 (0.6 - 0.1 = 50 points lost)
    s = hand.score(np.array([_action(hand, 0, "b8c6"), _action(hand, 1, "a2a3")]))
    assert s.agreement == 0.5
    assert s.regret == pytest.approx(25.0)
    assert (s.agreement_lower, s.agreement_upper) == pytest.approx(probe_lib.wilson(1, 2))
    with pytest.raises(ValueError, match="not legal"):
        hand.score(np.array([_action(hand, 1, "e2e4"), _action(hand, 1, "e2e4")]))  # e4 is no move of a


def test_random_mover_and_value_by_hand(hand):
    r = hand.random_score()
    n_a, n_b = len(hand.positions[0].moves), len(hand.positions[1].moves)
    assert r.agreement == pytest.approx((2 / n_a + 1 / n_b) / 2)
    assert r.regret == pytest.approx((40 * (n_a - 2) / n_a + 50 * (n_b - 1) / n_b) / 2)
    v = hand.value_score(np.array([0.0, 1.0]))  # win 50% where Stockfish says 50%; 100% where it says 60%
    assert v.error == pytest.approx((0 + 40) / 2)
    assert v.draw_error == pytest.approx((0 + 10) / 2)


def test_wilson_interval_matches_the_textbook_case():
    lo, hi = probe_lib.wilson(10, 100)
    assert lo == pytest.approx(0.0552, abs=1e-4) and hi == pytest.approx(0.1744, abs=1e-4)


def test_shipped_probe_file_is_real_games_replayed_exactly():
    positions = probe_lib.read_probe()
    assert len(positions) == 500 and len({p.id for p in positions}) == 500
    assert all(p.id.startswith("lichess_100_games_with_evals.pgn#") for p in positions)
    from distill.config import AnnotateConfig
    assert probe_lib.PROBE_PGN not in AnnotateConfig().pgn  # never annotated for training
    for p in positions[::50]:  # every legal move valued, the history leads to the position
        board = chess.Board(p.start_fen)
        for uci in p.history:
            board.push_uci(uci)
        assert board.fen() == p.fen
        assert sorted(p.moves) == sorted(m.uci() for m in board.legal_moves)
        assert all(0.0 <= v <= 1.0 for v in p.values)
    probe = ProbeSet(positions[:6])
    for i, p in enumerate(positions[:6]):  # batched replay == one game replayed through the bridge
        board = chess.Board(p.start_fen)
        for uci in p.history:
            board.push_uci(uci)
        ref = chess_bridge.board_to_state(board)
        np.testing.assert_array_equal(np.asarray(ref.observation), np.asarray(probe.states.observation[i]))
        np.testing.assert_array_equal(np.asarray(ref.legal_action_mask), np.asarray(probe.states.legal_action_mask[i]))


class _Out:
    def __init__(self, logits, value):
        self.policy_logits, self.value = logits, value


def test_an_oracle_policy_agrees_everywhere_and_a_draw_value_scores_the_draw_error(hand):
    best = np.array([_action(hand, 0, "d7d6"), _action(hand, 1, "e2e4")])
    table = jnp.zeros((2, 4672)).at[jnp.arange(2), jnp.asarray(best)].set(10.0)

    def apply(variables, obs):  # the row of each position, told apart by its side to move plane
        row = (obs[:, 0, 0, 112] == 0).astype(jnp.int32)  # black to move -> row 0 (position a)
        return _Out(table[row], jnp.zeros(obs.shape[0]))

    report = probe_lib.probe_network(hand, apply, None)
    assert report.policy.agreement == 1.0 and report.policy.regret == 0.0
    assert report.value.error == pytest.approx(report.value.draw_error)
    assert report.search is None and "policy 100.0%" in report.line()


def test_the_evaluator_reports_probe_figures_for_chess(tmp_path):
    """A chess evaluation carries the probe figures and the mate puzzles (with their count, for the
    intervals) into its report, ratings.csv (read back equal), the progress line and progress.png."""
    import jax

    import games
    from configs.loader import load
    from selfplay.config import SelfPlayConfig
    from selfplay.evaluation import Evaluator
    from selfplay.evaluation.store import read_reports
    from selfplay.messages import EvalRequest
    from selfplay.progress import probe_text
    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    # 4 openings x 2 colours = 8 games in flight and 8 probe positions: one search compile serves both
    cfg = load(SelfPlayConfig, root / "configs/chess_cpu.yaml", [
        "network.resnet.num_blocks=1", "network.resnet.filters=8", "network.resnet.value_hidden=8",
        "search.num_simulations=4", "evaluation.openings=4", "evaluation.engines=[]", "evaluation.max_plies=8",
        "evaluation.previous_networks=0", "evaluation.mate_puzzles=4", "evaluation.policy_mate_puzzles=6",
        "evaluation.probe=8"])
    evaluator = Evaluator(str(tmp_path), cfg)
    game = games.make("chess")
    obs = game.observe(game.init(jax.random.split(jax.random.PRNGKey(0), 1)))
    variables = evaluator.net.init(jax.random.PRNGKey(0), obs, train=False)
    report = evaluator.evaluate(EvalRequest(step=0, hours=0.0, positions=0, games=0, variables=variables))
    expected = probe_lib.probe_network(ProbeSet.load(limit=8), evaluator.apply, variables, evaluator.search, cfg.seed)
    assert report.probe_policy == expected.policy.agreement and report.probe_search == expected.search.agreement
    assert report.probe_value_error == pytest.approx(expected.value.error)
    assert 0 <= report.probe_policy_lower <= report.probe_policy <= report.probe_policy_upper <= 1
    assert read_reports(tmp_path / "eval" / "ratings.csv")[0].probe_search == pytest.approx(report.probe_search)
    # the search 4 mateIn1 + 4 mateIn2 (its mate checks mate in one untrained), the raw policy 6 mateIn1
    assert report.mate_puzzles == 8 and report.mates_search >= 0.5 and 0 <= report.mates_policy <= 1
    assert report.policy_mate_puzzles == 6 and 6 * report.mates_policy == round(6 * report.mates_policy)
    again = read_reports(tmp_path / "eval" / "ratings.csv")[0]
    assert (again.mate_puzzles, again.policy_mate_puzzles) == (8, 6)
    assert evaluator.first() == report  # what the run's learning check compares later evaluations with
    assert "agrees with Stockfish" in probe_text(report)
    assert (tmp_path / "eval" / "progress.png").stat().st_size > 0


def test_the_value_one_ply_mover_takes_the_capture_its_value_prefers_and_a_mate():
    """bench/probe.py's one-ply mover with a value by hand: a successor with fewer pieces than its
    parent is bad for its side to move (-0.5), any other 0; so among quiet moves and one capture it
    plays the capture (python-chess names it), and a mate in one (reward +1) beats a capture."""
    from by_path import load_module

    from games import make
    from models import NetworkOutput
    bench = load_module(Path(__file__).resolve().parents[1] / "bench" / "probe.py", "bench_probe")
    game = make("chess")
    fens = ["4k3/8/8/3p4/8/8/8/R3K2B w - - 0 1",      # Bxd5 the only capture
            "6k1/5ppp/8/8/8/8/5PPP/R5Kn w - - 0 1"]   # Kxh1 a capture, Ra8# a mate
    states = chess_bridge.fens_to_states(fens)
    parent_pieces = jnp.asarray([len(chess.Board(f).piece_map()) for f in fens], jnp.float32)
    width = 40

    def apply(variables, obs):  # pieces on the board: the first 12 planes are the position's own
        pieces = obs[..., :12].sum(axis=(1, 2, 3))
        parent = jnp.repeat(parent_pieces, width)
        value = jnp.where(pieces < parent, -0.5, 0.0)
        return NetworkOutput(jnp.zeros((obs.shape[0], game.spec.num_actions)), value, None)

    actions = np.asarray(bench.value_one_ply(game, apply, width)({})(states, None))
    boards = [chess.Board(f) for f in fens]
    capture = [m for m in boards[0].legal_moves if boards[0].is_capture(m)]
    assert len(capture) == 1 and capture[0].uci() == "h1d5"
    for board, action, want in zip(boards, actions, ["h1d5", "a1a8"]):
        assert action == chess_bridge.uci_to_pgx_action(want, board.turn == chess.WHITE)


def test_the_probe_panel_draws_its_references_from_the_first_evaluation():
    """The random mover's agreement and the constant draw's error are lines across the panel even when
    only step 0 has been evaluated (a one-point series would draw nothing)."""
    import types

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from selfplay.evaluation.plot import _plot_probe
    report = types.SimpleNamespace(
        step=0, probe_policy=0.06, probe_policy_lower=0.04, probe_policy_upper=0.09, probe_search=0.08,
        probe_search_lower=0.06, probe_search_upper=0.10, probe_random=0.059, probe_value_error=15.7,
        probe_value_error_lower=14.5, probe_value_error_upper=17.0, probe_draw_error=15.8)
    fig, (agree, value) = plt.subplots(1, 2)
    _plot_probe(agree, value, [report])
    flat = lambda ax: [line.get_ydata() for line in ax.get_lines() if line.get_label() in ("random mover", "always a draw")]
    assert len(flat(agree)) == 1 and np.allclose(flat(agree)[0], 5.9) and len(flat(agree)[0]) == 2
    assert np.allclose(flat(value)[0], 15.8) and len(flat(value)[0]) == 2  # a line across, not one point
    plt.close(fig)


def test_the_rule_movers_take_what_hangs_and_keep_what_is_defended():
    """bench/probe_rules.py's reference movers by hand: with a defended queen and a free knight in
    reach, `captures` takes the queen (the most valuable victim) and `material` the knight (after
    Qxd5 exd5 white is 4 down, after Qxa4+ 1 down: python-chess's material counts both); a mate in
    one comes first for `material`; on a one-position probe its move's action scores agreement 1."""
    import random

    from by_path import load_module
    rules = load_module(Path(__file__).resolve().parents[1] / "bench" / "probe_rules.py", "bench_probe_rules")
    board = chess.Board("4k3/8/4p3/3q4/n7/8/8/3QK3 w - - 0 1")
    assert rules.captures(board, random.Random(0)).uci() == "d1d5"
    assert rules.material(board, random.Random(0)).uci() == "d1a4"
    for uci, down in (("d1d5", -4), ("d1a4", -1)):
        after = board.copy()
        after.push_uci(uci)
        worst = min(rules._material(b, chess.WHITE) for b in (_pushed(after, r) for r in after.legal_moves))
        assert worst == down
    mate = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    assert rules.material(mate, random.Random(0)).uci() == "a1a8"
    position = ProbePosition("mate@0", mate.fen(), tuple(m.uci() for m in mate.legal_moves),
                             tuple(1.0 if m.uci() == "a1a8" else 0.5 for m in mate.legal_moves), mate.fen(), ())
    probe = ProbeSet([position])
    assert probe.score(rules.rule_actions(probe, rules.material)).agreement == 1.0
    assert probe.score(rules.rule_actions(probe, rules.captures)).agreement == 0.0  # no capture: a random move, not Ra8


def test_an_agent_on_the_probe_sees_the_game_and_a_bad_spec_is_one_line(hand):
    """bench/probe_rules.py --agent: an agent is reset before each position and plays it from its
    game's moves (the board's move stack is the history, as in a game); its move scores as any
    mover's (Nc6 ties black's best: agreement on that row). A spec the arena does not know is one
    line naming it, before the probe set is read."""
    import random

    from by_path import load_module
    rules = load_module(Path(__file__).resolve().parents[1] / "bench" / "probe_rules.py", "bench_probe_rules")
    seen = []

    class Stub:
        def reset(self, game=None):
            seen.append("reset")

        def select(self, board):
            seen.append(len(board.move_stack))
            return (chess.Move.from_uci("b8c6") if board.turn == chess.BLACK else chess.Move.from_uci("e2e4")), {}

    actions = rules.rule_actions(hand, rules.agent_mover(Stub()))
    assert seen == [x for p in hand.positions for x in ("reset", len(p.history))]
    assert hand.score(actions).agreement == 1.0
    assert rules.agent_mover(Stub())(chess.Board(), random.Random(0)).uci() == "e2e4"
    with pytest.raises(SystemExit, match="unknown agent 'nosuch'"):
        rules.main(["--agent", "nosuch:x=1"])


def _pushed(board: chess.Board, move: chess.Move) -> chess.Board:
    b = board.copy()
    b.push(move)
    return b


def test_the_value_offset_fits_every_position_and_successor(hand):
    """bench/probe.py's value_offset over the hand probe: a value of 0.25 everywhere is an intercept
    of 0.25 and no slope, over both positions and each of their successors python-chess counts
    (none ends the game), the batch of 3 padding the two positions with a repeated row."""
    from by_path import load_module

    from games import make
    from models import NetworkOutput
    bench = load_module(Path(__file__).resolve().parents[1] / "bench" / "probe.py", "bench_probe")
    game = make("chess")

    def apply(variables, obs):
        return NetworkOutput(jnp.zeros((obs.shape[0], game.spec.num_actions)), jnp.full(obs.shape[0], 0.25), None)

    successors = sum(chess.Board(p.fen).legal_moves.count() for p in hand.positions)
    fit = bench.value_offset(hand, game, apply, {}, batch_size=3)
    assert fit["boards"] == len(hand) + successors
    assert fit["intercept"] == pytest.approx(0.25) and fit["slope"] == pytest.approx(0.0, abs=1e-9)


def test_expected_scores_of_distributions_against_the_random_mover_and_by_hand(hand):
    """bench/probe.py's expected_score: the uniform distribution is the random mover (exact); half on
    Nc6 (a best move) and half on h6 (0.1 against 0.5) agrees half the time and loses 20 points on
    average; target_scores over a search stub whose target is one best move and whose prior is flat:
    the target agrees always, the prior as the random mover, KL(target || prior) = log(legal moves)."""
    import types

    from by_path import load_module
    bench = load_module(Path(__file__).resolve().parents[1] / "bench" / "probe.py", "bench_probe")
    legal = hand.actions >= 0
    uniform = bench.expected_score(hand, hand.actions, legal.astype(float))
    random = hand.random_score()
    assert uniform["agreement"] == pytest.approx(random.agreement) and uniform["regret"] == pytest.approx(random.regret)
    half = np.zeros(hand.actions.shape)
    half[0, hand.positions[0].moves.index("b8c6")] = half[0, hand.positions[0].moves.index("h7h6")] = 1.0
    half[1, hand.positions[1].moves.index("e2e4")] = 1.0
    by_row = bench.expected_score(hand, hand.actions, half)
    assert by_row["agreement"] == pytest.approx((0.5 + 1.0) / 2) and by_row["regret"] == pytest.approx((20 + 0) / 2)
    best = [_action(hand, 0, "d7d6"), _action(hand, 1, "e2e4")]

    def search(variables, states, key):  # slots: the legal moves in increasing id, as the search's
        mask = np.asarray(states.legal_action_mask)
        slots = np.full((len(mask), hand.actions.shape[1]), -1)
        for i, row in enumerate(mask):
            slots[i, :row.sum()] = np.flatnonzero(row)
        row_of = [[sorted(a[a >= 0]) for a in hand.actions].index(sorted(s[s >= 0])) for s in slots]
        target = (slots == np.array([best[r] for r in row_of])[:, None]).astype(np.float32)
        return types.SimpleNamespace(slot_actions=slots, policy_target=target, action=target.argmax(axis=1),
                                     prior_logits=np.where(slots >= 0, 0.0, -1e9))

    found = bench.target_scores(hand, search, {})
    assert found["target"]["agreement"] == 1.0 and found["target"]["regret"] == 0.0
    assert found["prior"]["agreement"] == pytest.approx(random.agreement)
    assert found["kl_target_prior"] == pytest.approx(np.log(legal.sum(axis=1)).mean())
    assert found["target_entropy"] == 0.0


def test_a_search_that_cannot_act_fails_before_any_measuring(monkeypatch):
    """bench/probe.py checks every network's every search first: PUCT's `fpu` under a Gumbel search is one
    line naming the network and the fix, raised before the probe set is read (which would fail here)."""
    from by_path import load_module
    bench = load_module(Path(__file__).resolve().parents[1] / "bench" / "probe.py", "bench_probe")
    net = str(Path(__file__).resolve().parents[1] / "networks" / "chess_cpu_60min")
    monkeypatch.setattr(probe_lib.ProbeSet, "load", lambda **_: pytest.fail("measured before checking"))
    with pytest.raises(SystemExit, match="chess_cpu_60min.*'fpu' is PUCT's.*parent_and_siblings"):
        bench.main(["--net", net, "--search", "policy=gumbel,q_transform=fpu"])
    with pytest.raises(SystemExit, match="network checkpoint not found"):
        bench.main(["--net", "no/such/net", "--no-search"])


def test_the_prior_shape_of_a_uniform_policy_is_log_of_the_legal_moves(hand):
    """bench/probe.py's prior_shape: uniform logits over all 4,672 actions are, over each position's legal
    moves (python-chess counts them), an entropy of log(n) and a top probability of 1/n."""
    from by_path import load_module

    from models import NetworkOutput
    bench = load_module(Path(__file__).resolve().parents[1] / "bench" / "probe.py", "bench_probe")
    apply = lambda variables, obs: NetworkOutput(jnp.zeros((obs.shape[0], 4672)), jnp.zeros(obs.shape[0]), None)  # noqa: E731
    n = np.array([chess.Board(p.fen).legal_moves.count() for p in hand.positions], np.float64)
    shape = bench.prior_shape(hand, apply, {}, batch_size=3)
    assert shape["entropy"] == pytest.approx(np.log(n).mean(), rel=1e-5)
    assert shape["top"] == pytest.approx((1 / n).mean(), rel=1e-5)
