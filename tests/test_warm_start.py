"""Warm start: annotated boards -> the self-play ResNet -> a network directory a run starts from."""
from __future__ import annotations

import dataclasses

import chess
import jax
import numpy as np
import pytest
from flax.traverse_util import flatten_dict

import games
import models
from arena.agents.spec import make_agent
from configs.loader import load, to_dict
from distill.config import DistillConfig
from distill.records import RecordStore, ShardWriter, fixed_sample
from distill.warm_start import load_boards, policy_target, warm_start
from games.chess_bridge import fen_to_state, uci_to_pgx_action
from selfplay.config import SelfPlayConfig
from selfplay.errors import RunError
from selfplay.prepare import open_run, read_inputs

# (FEN, the move the records call best): a mate in one for each side and two quiet positions
BOARDS = [("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", "a1a8"),
          ("r5k1/5ppp/8/8/8/8/5PPP/6K1 b - - 0 1", "a8a1"),
          (chess.STARTING_FEN, "e2e4"),
          ("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1", "c7c5")]
TINY = "game: chess\nnetwork:\n  family: resnet\n  resnet: {num_blocks: 1, filters: 8, value_hidden: 8}\n"


def _records(path, copies: int = 1, board_values=(0.95,) * len(BOARDS)):
    with ShardWriter(path) as w:
        for c in range(copies):
            for i, (fen, best) in enumerate(BOARDS):
                moves = [m.uci() for m in chess.Board(fen).legal_moves]
                values = [0.95 if m == best else 0.3 for m in moves]
                w.write({"fen": fen, "game": f"g#{c}-{i}", "ply": 0, "moves": moves, "values": values,
                         "value": board_values[i]})


def test_policy_target_one_hot_and_softmax():
    np.testing.assert_array_equal(policy_target(np.array([0.2, 0.9, 0.5]), 1, 0.0), [0, 1, 0])
    p = policy_target(np.array([0.0, np.log(3.0) * 0.1]), 1, 0.1)  # exp(v / T) = 1 : 3
    np.testing.assert_allclose(p, [0.25, 0.75], rtol=1e-6)


def test_the_held_out_boards_span_every_source_of_a_union():
    first_source, second_source = np.arange(0, 5000, 2), np.arange(100_000, 103_000, 3)
    test_idx = np.concatenate([first_source, second_source])  # a union's test split: sources in order
    chosen = fixed_sample(test_idx, 2000)
    assert len(chosen) == len(set(chosen)) == 2000 and set(chosen) <= set(test_idx)
    assert np.all(np.diff(chosen) > 0)  # read in directory order
    from_second = np.isin(chosen, second_source).mean()  # 1,000 of 3,500 test boards
    assert 0.2 < from_second < 0.37 and np.array_equal(chosen, fixed_sample(test_idx, 2000))  # the same every run
    assert np.array_equal(fixed_sample(first_source[:10], 2000), first_source[:10])


def test_boards_hold_the_legal_moves_and_targets(tmp_path):
    _records(tmp_path / "rec")
    store = RecordStore(tmp_path / "rec")
    width = games.make("chess").spec.max_legal_actions
    b = load_boards(store, np.arange(len(store)), width, 0.0)
    for row, (fen, best) in enumerate(BOARDS):
        legal = set(np.flatnonzero(np.asarray(fen_to_state(fen).legal_action_mask)).tolist())
        got = b.legal_actions[row][b.legal_actions[row] >= 0]
        assert set(got.tolist()) == legal and len(got) == len(legal)  # python-chess == pgx moves
        white = " w " in fen
        assert got[b.best[row]] == uci_to_pgx_action(best, white)
        assert b.policy[row, b.best[row]] == 1.0 and b.policy[row].sum() == 1.0
    np.testing.assert_allclose(b.z, 0.9)  # win probability 0.95 -> 2 * 0.95 - 1


@pytest.fixture(scope="module")
def distilled(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("warm")
    _records(tmp / "rec", copies=8)
    (tmp / "tiny.yaml").write_text(TINY)
    cfg = load(DistillConfig, None, [
        f"data.records={tmp / 'rec'}", "data.test_fraction=0.25", f"warm_start.selfplay={tmp / 'tiny.yaml'}",
        f"warm_start.out_dir={tmp / 'ws'}", "warm_start.batch_size=16", "warm_start.max_steps=150",
        "warm_start.learning_rate=0.05", "warm_start.progress=false"])
    return tmp, warm_start(cfg)


def test_warm_start_learns_the_best_moves(distilled):
    _, summary = distilled
    assert summary["steps"] == 150 and summary["test"]["boards"] > 0
    # the same four positions in every game: learnt, the mates and the openings alike
    assert summary["train_sample"]["move_accuracy"] == 1.0
    assert summary["test"]["move_accuracy"] == 1.0
    assert summary["train_sample"]["value_mse"] < 0.1
    assert summary["value_health"]["start_step"] == 100 and summary["value_health"]["warning"] is None


def test_a_run_starts_from_the_distilled_weights(distilled):
    tmp, summary = distilled
    saved = models.network_dir.load(summary["network"])
    assert saved.config.history is False  # FEN boards have no history: the network reads none
    cfg = load(SelfPlayConfig, str(tmp / "tiny.yaml"), [f"init.network={summary['network']}", "network.history=false",
                                                        f"runs_dir={tmp / 'runs'}", "name=warm"])
    game = games.make("chess")
    state = _first_state(cfg, game)
    jax.tree.map(np.testing.assert_array_equal, jax.device_get(state.params), saved.variables["params"])
    jax.tree.map(np.testing.assert_array_equal, jax.device_get(state.batch_stats),
                 saved.variables["batch_stats"])
    assert int(state.step) == 0
    assert saved.metadata["search"] == to_dict(cfg.search)  # mcts:net= plays the preset's search
    fresh = _first_state(load(SelfPlayConfig, str(tmp / "tiny.yaml"), ["network.history=false",
                                                                       f"runs_dir={tmp / 'runs'}", "name=fresh"]), game)
    assert not np.array_equal(jax.tree.leaves(fresh.params)[0], jax.tree.leaves(state.params)[0])


def _first_state(cfg: SelfPlayConfig, game):
    """The learner state a new run starts from, as `selfplay.run.run` makes it."""
    start = open_run(cfg, game, read_inputs(cfg, game), resume=False)
    with start.checkpointer:
        return start.state


def test_a_network_of_another_shape_or_path_is_one_line(distilled):
    tmp, summary = distilled
    game = games.make("chess")
    wider = load(SelfPlayConfig, str(tmp / "tiny.yaml"),
                 [f"init.network={summary['network']}", "network.resnet.filters=16"])
    with pytest.raises(RunError, match="filters=8.*filters=16"):
        read_inputs(wider, game)
    reads_history = load(SelfPlayConfig, str(tmp / "tiny.yaml"), [f"init.network={summary['network']}"])
    with pytest.raises(RunError, match="history=false.*set network"):
        read_inputs(reads_history, game)
    missing = load(SelfPlayConfig, str(tmp / "tiny.yaml"), [f"init.network={tmp / 'nowhere'}",
                                                           f"runs_dir={tmp / 'runs_missing'}"])
    with pytest.raises(RunError, match="init.network"):
        read_inputs(missing, game)
    from selfplay.run import run
    with pytest.raises(RunError, match="init.network"):  # read before the run directory exists: a rerun may fix it
        run(missing)
    assert not (tmp / "runs_missing").exists()
    assert read_inputs(missing, game, resume=True).init_variables is None  # a resume reads its checkpoint instead


def test_a_warm_run_holding_its_policy_near_the_start_reads_the_start_on_resume_too(distilled):
    """learner.start_policy_weight, start_value_weight and start_entropy_weight need init.network (one line
    without it); a
    resumed run reads init.network's weights for the penalties alone (its state is the checkpoint's)."""
    tmp, summary = distilled
    game = games.make("chess")
    for name in ("start_policy_weight", "start_value_weight", "start_entropy_weight"):
        with pytest.raises(ValueError, match=f"{name} keeps the network near init.network"):
            load(SelfPlayConfig, str(tmp / "tiny.yaml"), [f"learner.{name}=0.5"])
    cfg = load(SelfPlayConfig, str(tmp / "tiny.yaml"), [f"init.network={summary['network']}", "network.history=false",
                                                        "learner.start_policy_weight=0.5"])
    saved = models.network_dir.load(summary["network"])
    resumed = read_inputs(cfg, game, resume=True).init_variables
    jax.tree.map(np.testing.assert_array_equal, resumed["params"], saved.variables["params"])
    plain = dataclasses.replace(cfg, learner=dataclasses.replace(cfg.learner, start_policy_weight=0.0))
    assert read_inputs(plain, game, resume=True).init_variables is None
    value_held = dataclasses.replace(plain, learner=dataclasses.replace(plain.learner, start_value_weight=1.0))
    assert read_inputs(value_held, game, resume=True).init_variables is not None
    entropy_held = dataclasses.replace(plain, learner=dataclasses.replace(plain.learner, start_entropy_weight=1.0))
    assert read_inputs(entropy_held, game, resume=True).init_variables is not None


def test_a_warm_start_whose_value_head_dies_says_so_and_how_to_start_again(tmp_path, capsys):
    """A rate that saturates the value's tanh (v the same for boards valued 0.1 to 0.9) by the first
    figures: one line on stderr then, not 200 steps later, and the warning in warm_start.json."""
    _records(tmp_path / "rec", copies=8, board_values=(0.9, 0.1, 0.5, 0.6))
    (tmp_path / "tiny.yaml").write_text(TINY)
    cfg = load(DistillConfig, None, [
        f"data.records={tmp_path / 'rec'}", "data.test_fraction=0.25", f"warm_start.selfplay={tmp_path / 'tiny.yaml'}",
        f"warm_start.out_dir={tmp_path / 'ws'}", "warm_start.batch_size=16", "warm_start.max_steps=230",
        "warm_start.learning_rate=5", "warm_start.log_every=20", "warm_start.progress=false"])
    health = warm_start(cfg)["value_health"]
    err = capsys.readouterr().err
    assert health["start_step"] == health["warning_step"] == 20 and health["value_std"] < 1e-3
    assert err.count("value head collapsing") == 1 and "warm_start.learning_rate" in err
    assert "value head collapsing at step 20: value std " in err and "(its first figures)" in err
    assert health["warning"] in err


def test_an_interrupted_warm_start_resumes_where_it_stopped(distilled):
    """A rerun of the same command continues the saved training state (its steps and seconds count
    toward the budget) instead of starting again; the rate drops 10x at 60% and 85% of the budget."""
    tmp, summary = distilled
    cfg = lambda steps: load(DistillConfig, None, [  # noqa: E731
        f"data.records={tmp / 'rec'}", "data.test_fraction=0.25", f"warm_start.selfplay={tmp / 'tiny.yaml'}",
        f"warm_start.out_dir={tmp / 'ws'}", "warm_start.batch_size=16", f"warm_start.max_steps={steps}",
        "warm_start.learning_rate=0.05", "warm_start.progress=false"])
    again = warm_start(cfg(160))  # the fixture's run stopped at its budget of 150
    assert (again["steps"], again["new_steps"]) == (160, 10)
    assert again["total_seconds"] > again["seconds"]
    assert again["final_learning_rate"] == pytest.approx(0.05 / 100)  # past 85% of 160 steps
    from distill.warm_start import phase_lr
    w = cfg(100).warm_start
    assert [phase_lr(w, s, 0.0) for s in (0, 59, 60, 84, 85)] == pytest.approx([0.05, 0.05, 0.005, 0.005, 0.0005])


def _corpus_records(path, copies: int = 1):
    """Records shaped like a frozen self-play corpus (replay/corpus.py): a policy and an outcome."""
    with ShardWriter(path) as w:
        for c in range(copies):
            for i, (fen, best) in enumerate(BOARDS):
                moves = [m.uci() for m in chess.Board(fen).legal_moves]
                policy = [3.0 if m == best else 1.0 for m in moves]
                w.write({"fen": fen, "game": f"g{c}-{i}", "ply": 0, "moves": moves, "values": [0.5] * len(moves),
                         "value": 0.6, "best": best, "policy": policy, "outcome": float(i % 2)})


def test_a_corpus_gives_its_policy_and_outcome_targets(tmp_path):
    _corpus_records(tmp_path / "corpus")
    store = RecordStore(tmp_path / "corpus")
    width = games.make("chess").spec.max_legal_actions
    b = load_boards(store, np.arange(len(store)), width, 0.0, soft=True, value_from="outcome")
    for row, (fen, _) in enumerate(BOARDS):
        n = chess.Board(fen).legal_moves.count()
        expected = np.full(n, 1.0 / (n + 2))
        expected[b.best[row]] = 3.0 / (n + 2)  # the record's policy, normalised
        np.testing.assert_allclose(b.policy[row, :n], expected, rtol=1e-6)
        assert b.policy[row, n:].sum() == 0
    np.testing.assert_array_equal(b.z, [-1.0, 1.0, -1.0, 1.0])  # outcome 0 / 1 -> -1 / +1
    np.testing.assert_allclose(load_boards(store, np.arange(4), width, 0.0).z, 0.2)  # value 0.6 by default
    _records(tmp_path / "annotations")  # Stockfish annotations: no policy, no outcome
    annotations = RecordStore(tmp_path / "annotations")
    with pytest.raises(ValueError, match="no policy.*bc_soft needs a frozen self-play corpus"):
        load_boards(annotations, np.arange(4), width, 0.0, soft=True)
    with pytest.raises(ValueError, match="no 'outcome'.*sv_from=value"):
        load_boards(annotations, np.arange(4), width, 0.0, value_from="outcome")


def test_selfplay_set_trains_a_chessformer_student(tmp_path):
    _corpus_records(tmp_path / "corpus", copies=8)
    (tmp_path / "tiny.yaml").write_text(TINY)
    cfg = load(DistillConfig, None, [
        f"data.records={tmp_path / 'corpus'}", "data.test_fraction=0.25", "data.bc_soft=true",
        f"warm_start.selfplay={tmp_path / 'tiny.yaml'}", f"warm_start.out_dir={tmp_path / 'cf'}",
        "warm_start.selfplay_set=[network.family=chessformer, network.chessformer.num_layers=1, "
        "network.chessformer.embedding_dim=16, network.chessformer.head_dim=8, network.chessformer.mlp_dim=16, "
        "network.chessformer.value_hidden=8]",
        "warm_start.batch_size=4", "warm_start.max_steps=2", "warm_start.progress=false"])
    summary = warm_start(cfg)
    saved = models.network_dir.load(summary["network"])
    assert summary["family"] == saved.config.family == "chessformer"
    assert saved.config.chessformer.embedding_dim == 16 and summary["parameters"] > 0
    assert saved.metadata["warm_start"]["bc_soft"] is True
    agent = make_agent(f"policy:net={summary['network']}")  # the arena plays it as a searchless player
    board = chess.Board(BOARDS[0][0])
    move, _ = agent.select(board)
    assert move in board.legal_moves


def test_a_run_mixes_annotated_boards_as_anchors(tmp_path):
    """replay.anchor_records: the run reads the train split's boards (best move one-hot, or softened by
    replay.anchor_temperature; the oracle's value), packed exactly as the replay buffer mixes them in;
    a bad directory or a history-reading network is one line."""
    from games import packing
    _records(tmp_path / "rec", copies=3)
    (tmp_path / "tiny.yaml").write_text(TINY)
    cfg = load(SelfPlayConfig, str(tmp_path / "tiny.yaml"), [f"replay.anchor_records={tmp_path / 'rec'}",
                                                            "replay.anchor_fraction=0.25", "network.history=false"])
    game = games.make("chess")
    anchor = read_inputs(cfg, game).anchors
    store = RecordStore(tmp_path / "rec")
    train = store.split("train", 0.05)
    assert len(anchor) == len(train) and 0 < len(train) <= 12
    expected = load_boards(store, train, game.spec.max_legal_actions, 0.0)
    np.testing.assert_array_equal(packing.unpack(anchor.observation, game.spec.observation_shape, np.float32),
                                  expected.observation.astype(np.float32))
    np.testing.assert_array_equal(anchor.policy, expected.policy)
    np.testing.assert_allclose(anchor.z, 0.9)
    # replay.anchor_temperature: softmax(win probabilities / T) over the legal moves, the best (0.95) against
    # every other (0.3) at exp(0.65 / T), as the warm start's policy_temperature trains
    soft = read_inputs(dataclasses.replace(cfg, replay=dataclasses.replace(cfg.replay, anchor_temperature=0.5)),
                       game).anchors
    legal = soft.legal_actions >= 0
    np.testing.assert_allclose(soft.policy.sum(1), 1.0, rtol=1e-5)
    assert np.all(soft.policy[~legal] == 0)
    best = soft.policy.max(1)
    others = np.where(legal & (soft.policy < best[:, None]), soft.policy, np.nan)
    np.testing.assert_allclose(best / np.nanmax(others, 1), np.exp(0.65 / 0.5), rtol=1e-5)
    np.testing.assert_allclose(best / np.nanmin(others, 1), np.exp(0.65 / 0.5), rtol=1e-5)
    with pytest.raises(ValueError, match="anchor_temperature must be >= 0"):
        load(SelfPlayConfig, str(tmp_path / "tiny.yaml"), [f"replay.anchor_records={tmp_path / 'rec'}",
                                                          "replay.anchor_fraction=0.25", "network.history=false",
                                                          "replay.anchor_temperature=-1"])
    bad = load(SelfPlayConfig, str(tmp_path / "tiny.yaml"), [f"replay.anchor_records={tmp_path / 'none'}",
                                                            "replay.anchor_fraction=0.25", "network.history=false"])
    with pytest.raises(RunError, match="replay.anchor_records .*none"):
        read_inputs(bad, game)
    from selfplay.run import run
    with pytest.raises(RunError, match="replay.anchor_records .*none"):  # read before the run directory exists
        run(dataclasses.replace(bad, runs_dir=str(tmp_path / "runs")))
    assert not (tmp_path / "runs").exists()
    with pytest.raises(ValueError, match="network.history=false"):
        load(SelfPlayConfig, str(tmp_path / "tiny.yaml"), [f"replay.anchor_records={tmp_path / 'rec'}",
                                                          "replay.anchor_fraction=0.25"])


def test_a_warm_start_continues_a_network_and_may_grow_its_value_skip(distilled):
    """warm_start.init_network: the directory's weights (a fresh optimiser at step 0), with the value
    skip switched on its parameters added at zero, so the grown network plays exactly as the stored
    one until it trains; another shape is one line."""
    tmp, summary = distilled
    stored = models.network_dir.load(summary["network"])
    search = {**stored.metadata["search"], "num_simulations": 123}  # as a shipped network records its own
    models.network_dir.save(tmp / "shipped", stored.config, stored.variables, game="chess",
                            metadata={**stored.metadata, "search": search})
    base = [f"data.records={tmp / 'rec'}", "data.test_fraction=0.25", f"warm_start.selfplay={tmp / 'tiny.yaml'}",
            f"warm_start.init_network={tmp / 'shipped'}", "warm_start.batch_size=16", "warm_start.max_steps=0",
            "warm_start.progress=false"]
    grown = warm_start(load(DistillConfig, None, base + [
        f"warm_start.out_dir={tmp / 'grown'}", "warm_start.selfplay_set=[network.resnet.value_input_skip=true]"]))
    assert grown["init_network"] == str(tmp / "shipped") and grown["steps"] == 0
    net = models.network_dir.load(grown["network"])
    assert net.config.resnet.value_input_skip and not stored.config.resnet.value_input_skip
    assert not np.any(net.variables["params"]["value_skip"]["kernel"])
    obs = games.make("chess").observe(jax.tree.map(lambda x: x[None], fen_to_state(BOARDS[2][0])))
    for a, b in zip(net.module().apply(net.variables, obs, train=False),
                    stored.module().apply(stored.variables, obs, train=False)):
        if a is not None:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-6)
    with pytest.raises(ValueError, match="warm_start.init_network.*filters=8.*filters=16.*value_input_skip may be"):
        warm_start(load(DistillConfig, None, base + [f"warm_start.out_dir={tmp / 'wider'}",
                                                     "warm_start.selfplay_set=[network.resnet.filters=16]"]))
    continued = warm_start(load(DistillConfig, None, base + [f"warm_start.out_dir={tmp / 'continued'}",
                                                             "warm_start.max_steps=20"]))
    assert continued["test"]["move_accuracy"] == 1.0  # from the trained weights, not random ones
    assert net.metadata["search"] == search  # it plays as the network it continues


def test_a_run_may_grow_the_value_skip_on_the_network_it_starts_from(distilled):
    tmp, summary = distilled
    cfg = load(SelfPlayConfig, str(tmp / "tiny.yaml"), [f"init.network={summary['network']}", "network.history=false",
                                                        "network.resnet.value_input_skip=true"])
    grown = flatten_dict(read_inputs(cfg, games.make("chess")).init_variables)
    stored = flatten_dict(models.network_dir.load(summary["network"]).variables)
    for path, value in stored.items():
        np.testing.assert_array_equal(grown[path], value)
    added = set(grown) - set(stored)
    assert {p[:2] for p in added} == {("params", "value_skip"), ("params", "value_skip_bn"), ("batch_stats", "value_skip_bn")}
    assert not np.any(grown["params", "value_skip", "kernel"])
