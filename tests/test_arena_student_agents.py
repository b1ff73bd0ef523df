"""Students as arena agents (arena/agents/student.py, the av:/sv:/bc: specs) on tiny untrained networks of
both families: legal moves, mates by the rules, the threefold fix, temperature, errors that name the fix."""
import dataclasses

import chess
import jax
import pytest
from tiny_students import BOARDS, TINY

from arena import make_agent
from arena.agents.student import completes_threefold
from distill import student
from models import network_dir
from models.network import make_student


def _save_student(path, target, family="searchless"):
    cfg = student.network_config(dataclasses.replace(TINY, family=family), target)
    module = make_student(cfg)
    init = student.example_batch(cfg, target)
    kwargs = {"is_black": init["is_black"]} if family == "chessformer" else {}
    variables = module.init(jax.random.PRNGKey(0), init["inputs"], **kwargs)
    network_dir.save(path, cfg, {"params": variables["params"]}, metadata={"target": target})
    return path


@pytest.fixture(scope="module")
def students(tmp_path_factory):
    root = tmp_path_factory.mktemp("students")
    out = {t: _save_student(root / t, t) for t in ("av", "av_all", "sv", "bc")}
    out["cf-bc"] = _save_student(root / "cf-bc", "bc", "chessformer")
    out["cf-av_all"] = _save_student(root / "cf-av_all", "av_all", "chessformer")
    return out


@pytest.mark.parametrize("kind", ["av", "av_all", "sv", "bc", "cf-bc", "cf-av_all"])
def test_each_student_agent_returns_a_legal_move(students, kind):
    spec_kind = kind.removeprefix("cf-").replace("av_all", "av")
    player = make_agent(f"{spec_kind}:net={students[kind]}")
    for board in BOARDS:
        move, info = player.select(board)
        assert move in board.legal_moves
        assert set(info["scores"]) == {m.uci() for m in board.legal_moves}
    with pytest.raises(ValueError, match="holds a"):
        make_agent(f"{'sv' if spec_kind == 'av' else 'av'}:net={students[kind]}")


@pytest.mark.parametrize("kind", ["av", "av_all"])
def test_av_scores_a_mating_move_by_the_rules(students, kind):
    player = make_agent(f"av:net={students[kind]}")
    move, info = player.select(BOARDS[3])  # Ra8 mates
    assert move.uci() == "a1a8" and info["scores"]["a1a8"] == 1.0
    raw = make_agent(f"av:net={students[kind]},rules=false").select(BOARDS[3])[1]["scores"]
    assert raw["a1a8"] < 1.0  # the untrained network alone does not know it
    assert {m: v for m, v in raw.items() if m != "a1a8"} == \
        {m: v for m, v in info["scores"].items() if m != "a1a8"}


def test_sv_scores_mate_in_one_as_a_win(students):
    player = make_agent(f"sv:net={students['sv']}")
    move, info = player.select(BOARDS[3])
    assert move.uci() == "a1a8" and info["scores"]["a1a8"] == 1.0


def test_baseline_players_return_legal_moves():
    players = [make_agent("random:seed=3"), make_agent("stockfish:nodes=20")]
    for player in players:
        for board in BOARDS:
            assert player.select(board)[0] in board.legal_moves
    assert players[1].select(BOARDS[3])[0].uci() == "a1a8"
    players[1].close()
    with pytest.raises(FileNotFoundError, match="network directory '/nonexistent/run' not found"):
        make_agent("av:net=/nonexistent/run")
    with pytest.raises(ValueError, match="unknown agent 'alphabeta'"):
        make_agent("alphabeta")


def test_repetition_fix_scores_the_threefold_move_at_half(students):
    board = chess.Board()
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"]:
        board.push_uci(uci)
    repeat = chess.Move.from_uci("f6g8")
    assert completes_threefold(board, repeat)
    assert not completes_threefold(board, chess.Move.from_uci("e7e5"))
    for kind in ("av", "sv"):
        fixed = make_agent(f"{kind}:net={students[kind]},repetition_draw=true")
        raw = make_agent(f"{kind}:net={students[kind]},repetition_draw=false")
        s_fixed, s_raw = fixed.select(board)[1]["scores"], raw.select(board)[1]["scores"]
        assert s_fixed["f6g8"] == 0.5 and s_raw["f6g8"] != 0.5
        assert {m: s for m, s in s_fixed.items() if m != "f6g8"} == \
            {m: s for m, s in s_raw.items() if m != "f6g8"}
    # repetition_count=2 already scores a first return to a position at 0.5 (3, the paper's, not)
    once = chess.Board()
    for uci in ["g1f3", "g8f6", "f3g1"]:
        once.push_uci(uci)
    assert not completes_threefold(once, chess.Move.from_uci("f6g8"))
    for kind in ("av", "av_all", "sv"):
        spec = f"{'av' if kind == 'av_all' else kind}:net={students[kind]}"
        twofold, paper = make_agent(f"{spec},repetition_count=2"), make_agent(spec)
        s_two, s_paper = twofold.select(once)[1]["scores"], paper.select(once)[1]["scores"]
        assert s_two["f6g8"] == 0.5 and s_paper["f6g8"] != 0.5
        assert {m: s for m, s in s_two.items() if m != "f6g8"} == \
            {m: s for m, s in s_paper.items() if m != "f6g8"}


def test_temperature_samples_early_moves(students):
    player = make_agent(f"av:net={students['av']},temperature=100,temperature_plies=4,seed=0")
    picks = {player.select(chess.Board())[0] for _ in range(30)}
    assert len(picks) > 3  # sampled, not a fixed argmax
    late = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 30")
    assert all(m in late.legal_moves for m in {player.select(late)[0] for _ in range(5)})


@pytest.mark.parametrize("target", ["sv", "bc"])
def test_searchless_agent_plays_legal_moves(students, target):
    agent = make_agent(f"{target}:net={students[target]}")
    board = chess.Board()
    for _ in range(3):
        move, info = agent.select(board)
        assert move in board.legal_moves and info["pv"] == [move]
        assert ("value" in info) == (target != "bc")
        if target != "bc":
            assert -1 <= info["value"] <= 1
        board.push(move)
    agent.close()


def test_spec_kind_must_match_the_student(students):
    path = students["bc"]
    with pytest.raises(ValueError, match=r"bc student: play it as bc:net=\.\.\., not sv:"):
        make_agent(f"sv:net={path}")
