"""distill students: batches and losses by hand, the trainer overfits a small batch, action metrics and
puzzle scoring against hand-made cases, the learning-rate schedule (a whole run: test_distill_train_run.py)."""
import dataclasses

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny_students import BOARDS, TINY

from arena.suites.puzzles import Puzzle, solve_puzzle
from distill import dataset, encoding, losses, student, train
from distill.config import DistillConfig, StudentConfig
from distill.evaluate import action_metrics, held_out_records, imitation_metrics, puzzle_metrics
from distill.records import ShardWriter, split_of
from games import winprob
from models.network import make_student


def _records(boards_: list[chess.Board]) -> list[dict]:
    """Annotation-shaped records with made-up values: move i of a board is worth (i + 1) / (n + 1),
    so the best move is the last legal move in python-chess order."""
    out = []
    for b in boards_:
        moves = [m.uci() for m in b.legal_moves]
        out.append({"fen": b.fen(), "moves": moves, "value": 0.5,
                    "values": [(i + 1) / (len(moves) + 1) for i in range(len(moves))]})
    return out



def test_av_all_batches_hold_every_legal_moves_value():
    recs = _records(BOARDS)
    ex = dataset.load_examples(recs, range(len(recs)))
    picks = np.array([3, 0, 3, 2, 1])  # repeats and any order
    batch = dataset.sample_batch(ex, "av_all", np.random.default_rng(0), 4)
    assert batch["inputs"].shape == (4, 77) and batch["move_values"].shape == (4, encoding.NUM_ACTIONS)
    values, mask, valued = dataset.move_values(ex, picks)
    np.testing.assert_array_equal(valued, mask)  # Stockfish annotations value every move
    for row, i in enumerate(picks):
        rec = recs[i]
        expected = dict(zip(rec["moves"], rec["values"]))
        legal = {encoding.action_id(m): v for m, v in expected.items()}
        assert set(np.flatnonzero(mask[row])) == set(legal)  # exactly the legal moves
        for a, v in legal.items():
            assert values[row, a] == pytest.approx(v)
    cf = dataset.sample_batch(ex, "av_all", np.random.default_rng(0), 4, "chessformer")
    np.testing.assert_array_equal(cf["move_values"], batch["move_values"])  # same boards drawn
    drawn = [ex.fens[i] for i in np.random.default_rng(0).integers(0, len(ex), 4)]
    np.testing.assert_allclose(cf["inputs"], encoding.squares(drawn), atol=1e-3)  # cached, float16
    np.testing.assert_array_equal(cf["is_black"], encoding.is_black(drawn))
    policy = dataset.soft_policy(ex, picks)  # one-hot on each board's best (last) move
    np.testing.assert_array_equal(np.argmax(policy, 1),
                                  [encoding.action_id(recs[i]["moves"][-1]) for i in picks])



def test_chessformer_batches_gather_cached_squares(monkeypatch):
    """The training path encodes each board once; a batch is then a gather, no python-chess call."""
    recs = _records(BOARDS)
    ex = dataset.load_examples(recs, range(len(recs)))
    first = dataset.sample_batch(ex, "bc", np.random.default_rng(1), 64, "chessformer")

    def no_encoding(*_):
        raise AssertionError("a batch re-encoded boards")
    monkeypatch.setattr(encoding, "squares", no_encoding)
    again = dataset.sample_batch(ex, "bc", np.random.default_rng(1), 64, "chessformer")
    np.testing.assert_array_equal(first["inputs"], again["inputs"])
    assert again["inputs"].shape == (64, 64, 112) and again["inputs"].dtype == np.float32



def test_av_all_loss_by_hand():
    logits = jnp.zeros((1, encoding.NUM_ACTIONS)).at[0, 5].set(np.log(3.0))  # sigmoid 0.75
    values = jnp.zeros_like(logits).at[0, 5].set(1.0).at[0, 9].set(0.5)
    mask = jnp.zeros_like(logits).at[0, 5].set(1.0).at[0, 9].set(1.0)
    # move 5: -log 0.75; move 9 (p 0.5, target 0.5): log 2; the board's mean of the two
    expected = (-np.log(0.75) + np.log(2.0)) / 2
    out = losses.loss_fn(student.StudentOutput(move_logits=logits),
                         {"move_values": values, "move_mask": mask}, "av_all", "ce")
    assert float(out) == pytest.approx(expected, rel=1e-5)



def test_best_move_term_by_hand():
    """Softmax over the legal moves only, the target shared by the two moves tied at the best value."""
    logits = jnp.zeros((1, encoding.NUM_ACTIONS)).at[0, 5].set(np.log(3.0)).at[0, 100].set(50.0)
    values = jnp.zeros_like(logits).at[0, 5].set(0.8).at[0, 9].set(0.8).at[0, 11].set(0.2)
    mask = jnp.zeros_like(logits).at[0, jnp.array([5, 9, 11])].set(1.0)  # move 100 is illegal
    batch = {"move_values": values, "move_mask": mask}
    probs = np.array([3.0, 1.0, 1.0]) / 5.0  # softmax of logits log 3, 0, 0 over moves 5, 9, 11
    expected = -(np.log(probs[0]) + np.log(probs[1])) / 2
    assert float(losses.best_move_loss(logits, values, mask)) == pytest.approx(expected, rel=1e-5)
    pred = student.StudentOutput(move_logits=logits)
    plain = float(losses.loss_fn(pred, batch, "av_all", "ce"))
    mixed = float(losses.loss_fn(pred, batch, "av_all", "ce", best_move_weight=0.5))
    assert mixed == pytest.approx(plain + 0.5 * expected, rel=1e-5)


def test_best_move_weight_is_av_all_only_and_non_negative():
    """The AV-all preset's weight leaves a BC student's loss as it was (`--set data.target=bc` on
    distill_cpu.yaml stays a plain BC run); a negative weight is a one-line config error."""
    logp = jax.nn.log_softmax(jnp.arange(6.0)[None])
    batch = {"action": jnp.array([2])}
    assert float(losses.loss_fn(student.StudentOutput(logprobs=logp), batch, "bc", "ce", 1.0)) == \
        pytest.approx(float(losses.loss_fn(student.StudentOutput(logprobs=logp), batch, "bc", "ce")))
    with pytest.raises(ValueError, match="best_move_weight must be >= 0"):
        DistillConfig(train=dataclasses.replace(DistillConfig().train, best_move_weight=-1.0))



def test_student_compute_dtype_reaches_the_network_of_either_family():
    searchless = StudentConfig(family="searchless", compute_dtype="bfloat16")
    assert student.network_config(searchless, "av").searchless.compute_dtype == "bfloat16"
    assert student.network_config(StudentConfig(family="searchless"), "bc").searchless.compute_dtype == "float32"
    chessformer = StudentConfig(family="chessformer", compute_dtype="bfloat16")
    assert student.network_config(chessformer, "av_all").chessformer.compute_dtype == "bfloat16"
    assert student.network_config(dataclasses.replace(chessformer, preset="chessformer_4m"),
                                  "bc").chessformer.compute_dtype == "bfloat16"



@pytest.mark.parametrize("family", ["searchless", "chessformer"])
def test_av_all_student_learns_every_moves_value(family):
    recs = _records(BOARDS)
    ex = dataset.load_examples(recs, range(len(recs)))
    net_cfg = student.network_config(dataclasses.replace(TINY, family=family), "av_all")
    module = make_student(net_cfg)
    batch = dataset.sample_batch(ex, "av_all", np.random.default_rng(0), 4, family)
    tx = train.make_optimizer(dataclasses.replace(DistillConfig().train, learning_rate=3e-3))
    state = train.initial_state(module, net_cfg, "av_all", tx, 0)
    step = train.make_step(module, net_cfg, "av_all", "ce", tx, 0.99)
    jbatch = {k: jnp.asarray(v) for k, v in batch.items()}
    for _ in range(300):
        state, loss = step(state, jbatch)
    pred = student.predict(module, net_cfg, {"params": state["params"]}, jbatch, "av_all")
    q = jax.nn.sigmoid(pred.move_logits)
    mask = batch["move_mask"] > 0
    assert float(np.max(np.abs(np.where(mask, q - batch["move_values"], 0)))) < 0.1
    # the student's top legal move is the record's best move on every board
    assert np.all(np.argmax(np.where(mask, q, -1), 1) == np.argmax(np.where(mask, batch["move_values"], -1), 1))



def _tiny_av_batch() -> dict:
    """Per-pair AV inputs of BOARDS (each board's first legal move) with values in four bins of 16."""
    fens = [b.fen() for b in BOARDS]
    moves = [next(iter(b.legal_moves)).uci() for b in BOARDS]
    return {"inputs": jnp.asarray(np.concatenate([encoding.tokens(fens),
                                                   encoding.action_ids(moves)[:, None]], 1)),
            "value": jnp.asarray(np.array([0.03, 0.4, 0.7, 0.97], np.float32))}



def test_tiny_student_overfits_a_small_batch():
    target = "av"
    net_cfg = student.network_config(TINY, target)
    module = make_student(net_cfg)
    batch = _tiny_av_batch()  # four values in four different bins of 16
    tcfg = dataclasses.replace(DistillConfig().train, learning_rate=3e-3, grad_clip=1.0)
    tx = train.make_optimizer(tcfg)
    params = module.init(jax.random.PRNGKey(1), batch["inputs"])["params"]
    state = {"params": params, "ema": params, "opt_state": tx.init(params), "step": jnp.int32(0)}
    step = train.make_step(module, net_cfg, target, "ce", tx, 0.99)
    state, first = step(state, batch)
    for _ in range(150):
        state, loss = step(state, batch)
    assert float(first) > 2.0  # ~log(16) at init
    assert float(loss) < 0.05
    pred = student.predict(module, net_cfg, {"params": state["params"]}, batch, target)
    np.testing.assert_array_equal(np.argmax(pred.logprobs, -1), [0, 6, 11, 15])
    assert int(state["step"]) == 151



def test_l2_and_hl_gauss_losses_by_hand():
    logp = jnp.log(jnp.array([[0.5, 0.5, 0.0, 0.0]]) + 1e-30)
    # expected value (0.125 + 0.375) / 2 = 0.25; target 0.75 -> squared error 0.25
    assert float(losses.loss_fn(student.StudentOutput(logprobs=logp), {"value": jnp.array([0.75])},
                                "av", "l2")) == pytest.approx(0.25, abs=1e-6)
    hl = winprob.bin_targets(jnp.array([0.5]), 10, "hl_gauss")
    from reference_bins import hl_gauss_targets
    np.testing.assert_allclose(hl, hl_gauss_targets(np.array([0.5]), 10), atol=1e-5)



def test_puzzle_scoring_against_hand_made_lines():
    class Scripted:
        name = "scripted"

        def __init__(self, moves):
            self.moves = list(moves)

        def select(self, board):
            return chess.Move.from_uci(self.moves.pop(0)), {}

    # fool's mate: setup f2f3, solver e7e5, reply g2g4, solver d8h4 (mate)
    pz = Puzzle("fool", chess.STARTING_FEN, ("f2f3", "e7e5", "g2g4", "d8h4"), 900)
    assert solve_puzzle(Scripted(["e7e5", "d8h4"]), pz).solved
    assert not solve_puzzle(Scripted(["e7e6", "d8h4"]), pz).solved  # first solver move wrong
    other_first = dataclasses.replace(pz, moves=("f2f3", "e7e6", "g2g4", "d8h4"))
    assert solve_puzzle(Scripted(["e7e6", "d8h4"]), other_first).solved
    out = puzzle_metrics(Scripted(["e7e5", "d8h4", "e7e6"]), [pz, dataclasses.replace(pz, rating=1700)])
    assert out["puzzle_accuracy"] == 0.5
    assert out["bands"] == {"800-1199": {"accuracy": 1.0, "puzzles": 1},
                            "1600-1999": {"accuracy": 0.0, "puzzles": 1}}



def test_action_metrics_judge_a_scorer_by_its_top_move_and_a_selector_by_its_choice():
    """distill's action metrics are arena/suites/actions.py's: a player with move_scores by its
    top-scored move (of equal scores the first it lists, the one it plays) and Kendall's tau, any
    other by the move it selects; a record whose moves are not the legal moves, or whose FEN is not a
    playable position, is refused first."""
    board = chess.Board("7k/6pp/8/8/8/8/7P/R5K1 w - - 0 1")  # Ra8# only
    moves = [m.uci() for m in board.legal_moves]
    record = {"fen": board.fen(), "moves": moves, "values": [float(m == "a1a8") for m in moves]}
    other = next(m for m in moves if m != "a1a8")

    class Scorer:
        def __init__(self, order):
            self.order = order

        def move_scores(self, b):  # a tie at the top: the first listed is the one played
            return [chess.Move.from_uci(m) for m in self.order], np.array([1.0, 1.0] + [0.0] * (len(moves) - 2))

    class Selector:
        name, calls = "selector", 0

        def select(self, b):
            Selector.calls += 1
            return chess.Move.from_uci("a1a8"), {}

    rest = [m for m in moves if m not in ("a1a8", other)]
    assert action_metrics(Scorer(["a1a8", other] + rest), [record])["action_accuracy"] == 1.0
    missed = action_metrics(Scorer([other, "a1a8"] + rest), [record])
    assert missed["action_accuracy"] == 0.0 and (missed["boards"], missed["tau_boards"]) == (1, 1)
    picked = action_metrics(Selector(), [record, record])
    assert picked == {"action_accuracy": 1.0, "kendall_tau": None, "boards": 2, "tau_boards": 0}
    bad = dict(record, moves=moves[1:], values=record["values"][1:])
    with pytest.raises(ValueError, match="its moves are not the legal moves"):
        action_metrics(Selector(), [record, bad])
    assert Selector.calls == 2  # the bad record stopped it before the first board was played again
    with pytest.raises(ValueError, match="bad FEN '8/8/8/8/8/8/8/8 w - - 0 1'"):  # no kings
        action_metrics(Selector(), [record, dict(record, fen="8/8/8/8/8/8/8/8 w - - 0 1")])
    assert action_metrics(Selector(), [])["action_accuracy"] == 0.0  # evaluate.max_boards=0



def test_imitation_is_the_players_agreement_with_each_sources_policy_favourite(tmp_path):
    """Held-out boards with a policy, grouped by source (a teacher's raw policy, a search's visits),
    each capped at max_boards; a player that always plays the alphabetically first move agrees where
    the record's favourite is that move, and the policy mass on its move is the records' own."""
    rng = np.random.default_rng(0)
    recs = []
    for i, board in enumerate(BOARDS * 8):
        moves = [m.uci() for m in board.legal_moves]
        policy = rng.dirichlet(np.ones(len(moves)))
        if i % 3 == 0:  # the first move in alphabetical order is the favourite
            policy[moves.index(min(moves))] = 2.0
            policy /= policy.sum()
        teacher = i % 2 == 0
        recs.append({"fen": board.fen(), "game": f"g{i}", "moves": moves, "value": 0.5, "policy": policy.tolist(),
                     "values": [float("nan")] * len(moves) if teacher else [0.5] * len(moves),
                     "source": "teacher" if teacher else "selfplay"})
    with ShardWriter(tmp_path, shard_size=7) as w:
        w.write_many(recs)
    test = [r for r in recs if split_of(r["game"], 0.5) == "test"]
    cap = min(sum(r["source"] == s for r in test) for s in ("teacher", "selfplay")) - 1
    held_out = held_out_records(tmp_path, 0.5, cap, seed=3)
    assert len(held_out.scored) == cap and all(r["source"] == "selfplay" for r in held_out.scored)
    assert sorted(held_out.with_policy) == ["selfplay", "teacher"]

    class FirstMove:
        name = "first"

        def select(self, board):
            return min(board.legal_moves, key=chess.Move.uci), {}

    report = imitation_metrics(FirstMove(), held_out.with_policy)
    for source, group in held_out.with_policy.items():
        assert len(group) == cap and all(r["source"] == source and split_of(r["game"], 0.5) == "test" for r in group)
        first = [r["policy"][r["moves"].index(min(r["moves"]))] for r in group]
        hits = sum(int(np.argmax(r["policy"])) == r["moves"].index(min(r["moves"])) for r in group)
        assert hits > 0 and report[source]["agreement"] == hits / cap
        assert report[source]["boards"] == cap
        assert report[source]["interval"][0] < hits / cap < report[source]["interval"][1]
        assert report[source]["policy_on_move"] == pytest.approx(np.mean(first))
        assert report[source]["policy_on_favourite"] == pytest.approx(np.mean([max(r["policy"]) for r in group]))


def test_cosine_schedule_by_hand():
    assert train.lr_scale("constant", 0.7) == 1.0
    assert train.lr_scale("cosine", 0.0) == 1.0
    assert train.lr_scale("cosine", 0.5) == pytest.approx(0.5)
    assert train.lr_scale("cosine", 0.25) == pytest.approx((1 + np.sqrt(0.5)) / 2)
    assert train.lr_scale("cosine", 1.0) == pytest.approx(0.0)
    assert train.lr_scale("cosine", 3.0) == pytest.approx(0.0)  # past the budget: stays at 0
    # the run stops at whichever budget ends first, so progress is the larger fraction
    assert train.budget_progress(100, 1000, 900.0, 1800.0) == 0.5
    assert train.budget_progress(600, 1000, 900.0, 1800.0) == 0.6
    assert train.budget_progress(100, 1000, 900.0, 0.0) == 0.1  # no wall budget



def test_lr_scale_scales_the_update_as_the_learning_rate_does():
    """A step at scale s moves the parameters exactly as a step of an optimizer with s x the rate."""
    target = "av"
    net_cfg = student.network_config(TINY, target)
    module = make_student(net_cfg)
    batch = _tiny_av_batch()
    params = module.init(jax.random.PRNGKey(1), batch["inputs"])["params"]

    def one_step(lr, scale):
        tx = train.make_optimizer(dataclasses.replace(DistillConfig().train, learning_rate=lr))
        state = {"params": params, "ema": params, "opt_state": tx.init(params), "step": jnp.int32(0)}
        new, _ = train.make_step(module, net_cfg, target, "ce", tx, 0.99)(state, batch, scale)
        return jax.tree.map(lambda a, b: np.asarray(a - b), new["params"], params)

    scaled, direct, full = one_step(1e-3, 0.25), one_step(2.5e-4, 1.0), one_step(1e-3, 1.0)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-9), scaled, direct)
    assert max(float(np.max(np.abs(x))) for x in jax.tree.leaves(full)) > 1e-4  # a real update
    assert all(np.all(z == 0) for z in jax.tree.leaves(one_step(1e-3, 0.0)))  # scale 0: no move

