"""Self-play corpora as distill data: a real frozen corpus (replay/corpus.freeze) read as records,
SV from outcome or root value, BC soft targets (and AV-all's best-move term toward them), AV completed with a teacher's one-ply values."""
import chess
import jax.numpy as jnp
import numpy as np
import pytest

import arena
from distill import dataset, encoding, losses, selfplay_corpus, student
from distill.records import RecordStore, ShardWriter, iter_records
from games import chess_bridge
from replay import chunks, corpus
from replay.record import GameRecord, compress_observation

MOVES = ["e2e4", "e7e5", "g1f3", "b8c6"]


def _game_record() -> GameRecord:
    board = chess.Board()
    actions, legal, legal_actions, policy, child_q = [], [], [], [], []
    for t, uci in enumerate(MOVES):
        ucis = [m.uci() for m in board.legal_moves]
        legal.append(len(ucis))
        legal_actions += chess_bridge.ucis_to_pgx_actions(ucis, board.turn).tolist()
        pi = np.zeros(len(ucis))
        pi[ucis.index(uci)], pi[(ucis.index(uci) + 1) % len(ucis)] = 0.75, 0.25  # two visited moves
        policy += pi.tolist()
        child_q += np.linspace(-0.5, 0.5, len(ucis)).tolist()
        actions.append(chess_bridge.uci_to_pgx_action(uci, board.turn))
        board.push_uci(uci)
    n = len(MOVES)
    return GameRecord(
        game="chess", game_id="a0-1", init_key=np.zeros(2, np.uint32), actions=np.array(actions),
        observations=[compress_observation(np.zeros((8, 8, 119), np.float32))] * n,
        obs_shape=(8, 8, 119), obs_dtype="float32", to_play=np.array([0, 1, 0, 1]),
        num_legal=np.array(legal), legal_actions=np.array(legal_actions), policy=np.array(policy),
        child_q=np.array(child_q), root_value=np.array([0.1, -0.2, 0.3, -0.4]),
        rewards=np.array([1.0, -1.0]), termination="resign", resign_disabled=False,
        resign_would_have=-1, param_versions=np.array([0, 0]), created=0.0)


@pytest.fixture
def frozen(tmp_path):
    writer = chunks.ChunkWriter(tmp_path / "replay")
    writer.append(_game_record())
    writer.close()
    corpus.freeze(tmp_path / "replay", tmp_path / "corpus")
    return tmp_path / "corpus"


def test_frozen_corpus_reads_as_records_without_writing_into_it(frozen):
    before = sorted(p.name for p in frozen.iterdir())
    store = RecordStore(frozen)
    assert len(store) == len(MOVES)
    assert sorted(p.name for p in frozen.iterdir()) == before  # no index written into the corpus
    rec = store[1]
    board = chess.Board()
    board.push_uci("e2e4")
    assert rec["fen"] == board.fen() and rec["best"] == "e7e5"
    assert sorted(rec["moves"]) == sorted(m.uci() for m in board.legal_moves)
    ex_value = dataset.load_examples(store, range(4), sv_from="value")
    ex_outcome = dataset.load_examples(store, range(4), sv_from="outcome")
    np.testing.assert_allclose(ex_value.value, [0.55, 0.4, 0.65, 0.3], atol=1e-6)  # (v + 1) / 2
    np.testing.assert_allclose(ex_outcome.value, [1, 0, 1, 0])  # white (player 0) won
    # BC: hard target is the move played; the soft one the visit distribution
    rng = np.random.default_rng(0)
    batch = dataset.sample_batch(ex_value, "bc", rng, 16, bc_soft=True)
    assert batch["policy"].shape == (16, 1968)
    np.testing.assert_allclose(batch["policy"].sum(1), 1.0, atol=1e-6)
    assert np.all(np.sort(batch["policy"], 1)[:, -2:] == np.array([0.25, 0.75], np.float32))
    assert np.all(batch["policy"][np.arange(16), batch["action"]] == np.float32(0.75))
    # AV-all with bc_soft: the same distribution beside the values, for its best-move term
    av = dataset.sample_batch(ex_value, "av_all", np.random.default_rng(0), 16, bc_soft=True)
    np.testing.assert_array_equal(av["policy"], batch["policy"])
    assert np.all((av["policy"] > 0) <= (av["move_mask"] > 0))
    assert "policy" not in dataset.sample_batch(ex_value, "av_all", np.random.default_rng(0), 16)


def test_fast_plies_of_an_older_playout_capped_corpus_are_left_out(tmp_path):
    """Corpora of runs with playout cap randomization (since retired) mark each row's `full_search`;
    the fast plies' weak targets stay out of every split, as the retired data.fast_plies=drop did."""
    with ShardWriter(tmp_path / "older") as writer:
        for row in corpus.rows(_game_record()):
            writer.write({**row, "full_search": row["ply"] % 2 == 0})  # plies 1 and 3 searched fast
    store = RecordStore(tmp_path / "older")
    assert len(store) == 4
    full = np.concatenate([store.split(s, 0.5) for s in ("train", "test")])
    assert sorted(store[int(i)]["ply"] for i in full) == [0, 2]
    assert "full_search" not in next(corpus.rows(_game_record()))  # current corpora have no fast plies


def test_av_values_of_unvisited_moves_come_from_the_teacher(frozen, tmp_path):
    seen = []

    def teacher(boards):
        seen.extend(b.fen() for b in boards)
        return np.full(len(boards), 0.2)  # every successor: 20% for the opponent

    out = selfplay_corpus.complete_action_values(frozen, tmp_path / "av", teacher, show_progress=False)
    assert out["records"] == len(MOVES)
    for orig, done in zip(iter_records(frozen), iter_records(tmp_path / "av")):
        for share, q, v in zip(orig["policy"], orig["values"], done["values"]):
            assert v == (q if share > 0 else pytest.approx(0.8))
    assert len(seen) == sum(len(r["moves"]) - 2 for r in iter_records(frozen))
    again = selfplay_corpus.complete_action_values(frozen, tmp_path / "av", teacher, show_progress=False)
    assert again["records"] == len(MOVES) and again["resumed_after"] == len(MOVES)  # a finished job: nothing added
    assert len(list(iter_records(tmp_path / "av"))) == len(MOVES)
    with pytest.raises(FileExistsError, match="write into a new directory"):  # another job's directory
        selfplay_corpus.complete_action_values(frozen, tmp_path / "av", teacher, replies="captures")


def test_an_interrupted_completion_resumes_to_the_same_records(frozen, tmp_path, monkeypatch):
    calls = []

    def teacher(boards):
        calls.append(len(boards))
        if len(calls) == 3:  # the first run dies during its third group (once only)
            raise RuntimeError("killed")
        return np.array([(sum(map(ord, b.fen())) % 97) / 97 for b in boards])

    monkeypatch.setattr(selfplay_corpus, "RECORDS_PER_CALL", 1)
    with pytest.raises(RuntimeError, match="killed"):
        selfplay_corpus.complete_action_values(frozen, tmp_path / "av", teacher, show_progress=False, replies="captures")
    assert len(list(iter_records(tmp_path / "av"))) == 2
    out = selfplay_corpus.complete_action_values(frozen, tmp_path / "av", teacher, show_progress=False, replies="captures")
    assert out == {"records": len(MOVES), "resumed_after": 2, "out_dir": str(tmp_path / "av")}
    selfplay_corpus.complete_action_values(frozen, tmp_path / "clean", teacher, show_progress=False, replies="captures")
    resumed, clean = list(iter_records(tmp_path / "av")), list(iter_records(tmp_path / "clean"))
    assert [r["values"] for r in resumed] == [r["values"] for r in clean]
    assert {r["value_source"] for r in clean} == {"search_q+teacher_capture_reply"}


def test_grouped_completion_equals_one_record_at_a_time(frozen, tmp_path, monkeypatch):
    calls = []

    def teacher(boards):  # a value that differs per board, so a mixed-up split would show
        calls.append(len(boards))
        return np.array([(sum(map(ord, b.fen())) % 97) / 97 for b in boards])

    monkeypatch.setattr(selfplay_corpus, "RECORDS_PER_CALL", 2)  # groups of 2 and a remainder
    selfplay_corpus.complete_action_values(frozen, tmp_path / "av", teacher, show_progress=False)
    grouped = list(iter_records(tmp_path / "av"))
    one_by_one = [selfplay_corpus.complete_record(rec, teacher) for rec in iter_records(frozen)]
    assert [r["values"] for r in grouped] == [r["values"] for r in one_by_one]
    assert len(calls) == -(-len(MOVES) // 2) + len(MOVES)  # one call per group, then one per record


def test_a_record_with_a_bad_fen_is_named_before_the_teacher_is_asked(frozen):
    rec = next(iter_records(frozen))
    asked = []
    with pytest.raises(ValueError, match="bad FEN '8/8/8/8/8/8/8/8 w - - 0 1'"):  # no kings
        selfplay_corpus.complete_records([rec, dict(rec, fen="8/8/8/8/8/8/8/8 w - - 0 1")], asked.append)
    assert asked == []


def test_the_completion_command_names_a_missing_corpus(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        selfplay_corpus.main([str(tmp_path / "nowhere"), str(tmp_path / "av"), "--teacher", "networks/chess_distilled_4x64"])
    assert "no corpus shards" in str(exit_.value) and not (tmp_path / "av").exists()


def test_several_runs_freeze_into_one_corpus_with_their_games_apart(tmp_path):
    runs = []
    for name in ("run_a", "run_b"):  # the same game id in both runs
        writer = chunks.ChunkWriter(tmp_path / name / "replay")
        writer.append(_game_record())
        writer.close()
        runs.append(tmp_path / name)
    assert corpus.main([str(r) for r in runs]) == 2  # several runs need --out
    assert corpus.main([*map(str, runs), "--out", str(tmp_path / "both")]) == 0
    store = RecordStore(tmp_path / "both")
    assert len(store) == 2 * len(MOVES)
    assert sorted({store[i]["game"] for i in range(len(store))}) == ["0:a0-1", "1:a0-1"]
    assert [store[i]["fen"] for i in range(len(MOVES))] == [store[len(MOVES) + i]["fen"] for i in range(len(MOVES))]


def test_best_move_term_toward_a_visit_distribution_by_hand():
    """With a record's visit distribution (`data.bc_soft`) the term's target is the distribution, not
    the move of the best value: here the best value's move 5 was visited least."""
    logits = jnp.zeros((1, encoding.NUM_ACTIONS)).at[0, 5].set(np.log(3.0)).at[0, 100].set(50.0)
    values = jnp.zeros_like(logits).at[0, 5].set(0.9).at[0, 9].set(0.6).at[0, 11].set(0.2)
    mask = jnp.zeros_like(logits).at[0, jnp.array([5, 9, 11])].set(1.0)
    policy = jnp.zeros_like(logits).at[0, 5].set(0.25).at[0, 9].set(0.75)
    probs = np.array([3.0, 1.0, 1.0]) / 5.0
    expected = -(0.25 * np.log(probs[0]) + 0.75 * np.log(probs[1]))
    assert float(losses.best_move_loss(logits, values, mask, policy)) == pytest.approx(expected, rel=1e-5)
    batch = {"move_values": values, "move_mask": mask, "policy": policy}
    pred = student.StudentOutput(move_logits=logits)
    plain = float(losses.loss_fn(pred, {"move_values": values, "move_mask": mask}, "av_all", "ce"))
    assert float(losses.loss_fn(pred, batch, "av_all", "ce", best_move_weight=2.0)) == \
        pytest.approx(plain + 2.0 * expected, rel=1e-5)


def _material_value(boards):
    """Win probability of the side to move from the material lead alone (1/3/3/5/9), a stand-in teacher."""
    worth = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}
    leads = [sum(worth[p.piece_type] * (1 if p.color == b.turn else -1) for p in b.piece_map().values())
             for b in boards]
    return 1 / (1 + np.exp(-0.5 * np.array(leads, np.float64)))


def test_capture_replies_value_a_hung_piece_as_lost():
    """After 1.e3 Nf6 every white move leaves the material level one ply on, so the one-ply values
    are all 0.5; read with black's captures, exactly the moves that hang something fall: Qg4 and Qh5
    (a knight takes the queen), Ba6 (two pieces take the bishop), e4 and g4 (the knight takes the pawn)."""
    board = chess.Board("rnbqkb1r/pppppppp/5n2/8/8/4P3/PPPP1PPP/RNBQKBNR w KQkq - 1 2")
    moves = list(board.legal_moves)
    [one] = arena.one_ply_values_many([(board, moves)], _material_value)
    [read] = arena.capture_reply_values_many([(board, moves)], _material_value)
    np.testing.assert_allclose(one, 0.5)
    value = {board.san(m): v for m, v in zip(moves, read)}
    assert {san for san, v in value.items() if v < 0.5} == {"Qg4", "Qh5", "Ba6", "e4", "g4"}
    assert value["Qg4"] == pytest.approx(1 / (1 + np.exp(4.5))) and value["g4"] == pytest.approx(1 / (1 + np.exp(0.5)))
    assert value["Ba6"] == pytest.approx(1 / (1 + np.exp(1.5)))  # a bishop down


def test_a_capture_that_mates_values_the_move_as_lost():
    """1.e4 e5 2.Bc4 Nc6 3.Qh5: black's ...Nf6 allows Qxf7 mate (0 by the rules, whatever the value
    says); ...g6 allows captures but no mate."""
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR b KQkq - 3 3")
    moves = [chess.Move.from_uci(u) for u in ("g8f6", "g7g6")]
    [read] = arena.capture_reply_values_many([(board, moves)], _material_value)
    assert read[0] == 0.0 and 0.0 < read[1] < 0.5
