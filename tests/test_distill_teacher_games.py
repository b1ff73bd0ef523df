"""Teacher games as distill records: the teacher's policy and one-ply values on every new board of its
raw-policy games, outcomes from the rules, a resumed job that repeats no board, the real network's
priors against the arena's policy agent."""
import chess
import numpy as np
import pytest

import arena
from distill import dataset, losses, student, teacher_games
from distill.records import RecordStore, iter_records

FOOLS_LINE = '[Event "fool"]\n\n1. f3 e5 2. g4 *\n'


class RuleTeacher:
    """A teacher written by hand: logit 5 for a mate, 1 for a capture, else 0; value from material."""

    @staticmethod
    def _logit(board, move):
        board.push(move)
        mate = board.is_checkmate()
        board.pop()
        return 5.0 if mate else 1.0 if board.is_capture(move) else 0.0

    def priors(self, boards, moves):
        logits = [np.array([self._logit(b, m) for m in legal]) for b, legal in zip(boards, moves)]
        return logits, self.win_probabilities(boards)

    @staticmethod
    def win_probabilities(boards):
        values = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}
        out = []
        for b in boards:
            own = sum(values[p.piece_type] for p in b.piece_map().values() if p.color == b.turn)
            theirs = sum(values[p.piece_type] for p in b.piece_map().values() if p.color != b.turn)
            out.append(0.5 + 0.02 * (own - theirs))
        return np.array(out)


def _job(tmp_path, **kw):
    book = tmp_path / "fool.pgn"
    book.write_text(FOOLS_LINE)
    return teacher_games.TeacherGames(teacher="rules", book=str(book), **kw)


def test_records_hold_the_teachers_policy_values_and_the_games_outcome(tmp_path):
    job = _job(tmp_path, temperature=0.05, max_plies=12)
    teacher_games.generate(tmp_path / "out", job, boards=1, games_at_once=3, teacher=RuleTeacher(),
                           show_progress=False)
    recs = list(iter_records(tmp_path / "out"))
    assert len(recs) == 1  # three games reach the same board at once: one record
    mate = recs[0]  # after 1. f3 e5 2. g4 the teacher mates
    board = chess.Board(mate["fen"])
    assert board.turn == chess.BLACK and mate["outcome"] == 1.0 and mate["game"].startswith("teacher-0-")
    assert sorted(mate["moves"]) == sorted(m.uci() for m in board.legal_moves)
    logits = [RuleTeacher._logit(board, chess.Move.from_uci(u)) for u in mate["moves"]]
    np.testing.assert_allclose(mate["policy"], np.exp(logits) / np.exp(logits).sum(), rtol=1e-9)
    for uci, value in zip(mate["moves"], mate["values"]):  # one ply: the rules', else 1 - V(successor)
        board.push_uci(uci)
        expected = 1.0 if board.is_checkmate() else 1.0 - RuleTeacher.win_probabilities([board])[0]
        board.pop()
        assert value == pytest.approx(expected)
    assert mate["value"] == pytest.approx(0.5)  # material level after 2. g4
    assert len(RecordStore(tmp_path / "out")) == 1
    with pytest.raises(ValueError, match="stopped reaching new boards"):  # the same game over and over
        teacher_games.generate(tmp_path / "out", job, boards=2, games_at_once=3, teacher=RuleTeacher(),
                               show_progress=False)


def test_a_game_at_the_ply_cap_is_a_draw_for_both_sides(tmp_path):
    job = _job(tmp_path, temperature=50.0, max_plies=6)  # almost uniform: no mate before ply 6 here
    teacher_games.generate(tmp_path / "out", job, boards=1, games_at_once=1, teacher=RuleTeacher(),
                           show_progress=False)
    recs = list(iter_records(tmp_path / "out"))
    assert [r["ply"] for r in recs] == [3, 4, 5] and all(r["outcome"] == 0.5 for r in recs)


def test_a_resumed_job_plays_new_games_and_repeats_no_board(tmp_path):
    job = _job(tmp_path, temperature=20.0, max_plies=16)
    first = teacher_games.generate(tmp_path / "out", job, boards=30, games_at_once=4, teacher=RuleTeacher(),
                                   show_progress=False)
    second = teacher_games.generate(tmp_path / "out", job, boards=60, games_at_once=4, teacher=RuleTeacher(),
                                    show_progress=False)
    recs = list(iter_records(tmp_path / "out"))
    assert second["resumed_after"] == first["records"] >= 30 and len(recs) == second["records"] >= 60
    assert len({teacher_games.board_key(r["fen"]) for r in recs}) == len(recs)
    first_games = {r["game"] for r in recs[:first["records"]]}
    assert not first_games & {r["game"] for r in recs[first["records"]:]}
    with pytest.raises(FileExistsError, match="other records"):
        teacher_games.generate(tmp_path / "out", _job(tmp_path, temperature=1.0), boards=90,
                               teacher=RuleTeacher(), show_progress=False)


def test_the_network_teachers_favourite_is_the_policy_agents_move():
    net = "networks/chess_distilled_4x64"
    teacher = teacher_games._Teacher(net, batch=4)
    boards = [chess.Board(), chess.Board("rnb1kbnr/pppp1ppp/8/4p3/4P2q/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")]
    moves = [list(b.legal_moves) for b in boards]
    logits, values = teacher.priors(boards, moves)
    agent = arena.make_agent(f"policy:net={net}")
    for board, legal, lg in zip(boards, moves, logits):
        assert legal[int(np.argmax(lg))] == agent.select(board)[0]
    assert values.shape == (2,) and np.all((values > 0) & (values < 1))


def test_a_job_that_failed_before_its_first_record_can_be_rerun_otherwise(tmp_path):
    with pytest.raises(SystemExit, match="not found"):  # a wrong teacher: one line, no record written
        teacher_games.main([str(tmp_path / "out"), "--teacher", str(tmp_path / "missing"), "--boards", "1"])
    teacher_games.generate(tmp_path / "out", _job(tmp_path, temperature=20.0, max_plies=8), boards=1,
                           games_at_once=1, teacher=RuleTeacher(), show_progress=False)
    assert len(list(iter_records(tmp_path / "out"))) >= 1


def test_the_command_names_a_bad_temperature(capsys):
    with pytest.raises(SystemExit, match="temperature"):
        teacher_games.main(["out", "--teacher", "x", "--boards", "5", "--temperature", "0"])


def test_policy_only_boards_train_the_policy_term_and_leave_the_value_loss_alone(tmp_path):
    job = _job(tmp_path, temperature=20.0, max_plies=12, values="none")
    teacher_games.generate(tmp_path / "out", job, boards=5, games_at_once=2, teacher=RuleTeacher(),
                           show_progress=False)
    policy_only = list(iter_records(tmp_path / "out"))[0]
    assert np.all(np.isnan(policy_only["values"])) and sum(policy_only["policy"]) == pytest.approx(1.0)
    valued = {**policy_only, "game": "valued", "values": list(np.linspace(0.2, 0.8, len(policy_only["moves"])))}
    ex = dataset.load_examples([valued, policy_only], [0, 1])
    values, mask, value_mask = dataset.move_values(ex, np.array([0, 1]))
    assert value_mask[0].sum() == mask[0].sum() == mask[1].sum() > 0 and value_mask[1].sum() == 0
    batch = {"move_values": values, "move_mask": mask, "value_mask": value_mask,
             "policy": dataset.soft_policy(ex, np.array([0, 1]))}
    logits = np.random.default_rng(0).normal(size=values.shape).astype(np.float32)
    pred = student.StudentOutput(move_logits=logits)
    alone = {k: v[:1] for k, v in batch.items()}
    value_loss = float(losses.loss_fn(pred, batch, "av_all", "ce"))
    assert value_loss == pytest.approx(float(losses.loss_fn(student.StudentOutput(move_logits=logits[:1]), alone,
                                                            "av_all", "ce")))  # the policy-only board adds nothing
    with_policy = float(losses.loss_fn(pred, batch, "av_all", "ce", best_move_weight=1.0))
    legal = np.flatnonzero(mask[1])
    log_p = logits[1, legal] - np.log(np.sum(np.exp(logits[1, legal])))
    by_hand = -np.sum(batch["policy"][1, legal] * log_p)  # its policy term: CE toward the teacher's policy
    first = float(losses.best_move_loss(logits[:1], values[:1], mask[:1], batch["policy"][:1]))
    assert with_policy == pytest.approx(value_loss + (first + by_hand) / 2, rel=1e-5)
    without_policy = {k: v for k, v in batch.items() if k != "policy"}  # the best valued move: none here
    assert float(losses.loss_fn(pred, without_policy, "av_all", "ce", best_move_weight=1.0)) == pytest.approx(
        value_loss + float(losses.best_move_loss(logits[:1], values[:1], mask[:1])) / 2, rel=1e-5)
    pairs = dataset.sample_batch(ex, "av", np.random.default_rng(0), 64)
    assert np.all(np.isfinite(pairs["value"]))  # per-pair AV draws only valued moves
