"""Agent spec strings: parsing, and one clear error for every kind of bad input."""
import sys

import chess
import pytest

from arena import SpecError, make_agent, parse_spec
from arena.agents.spec import check_agent


def test_parse_examples():
    s = parse_spec("mcts:net=runs/a/network,sims=800")
    assert s.kind == "mcts" and s.get("net") == "runs/a/network" and s.get("sims") == 800
    s = parse_spec("stockfish:skill=0,nodes=1000")
    assert (s.get("skill"), s.get("nodes"), s.get("movetime")) == (0, 1000, None)
    assert parse_spec("stockfish:movetime=50").get("movetime") == 50
    assert parse_spec("random").kind == "random" and parse_spec("random").name == "random"
    s = parse_spec('uci:cmd="/usr/bin/engine --threads=2, --x",name=my engine')
    assert s.get("cmd") == "/usr/bin/engine --threads=2, --x" and s.name == "my engine"
    assert parse_spec("policy:net=x,temperature=0.5").get("temperature") == 0.5
    for kind in ("av", "sv", "bc"):
        assert parse_spec(f"{kind}:net=p").get("net") == "p"


def test_search_and_student_keys():
    s = parse_spec("mcts:net=n,policy=gumbel,sims=64,q_transform=min_max,max_num_considered_actions=8,"
                   "dirichlet_alpha=0.3,root_noise=true,temperature=0.5")
    assert (s.get("policy"), s.get("num_simulations"), s.get("sims"), s.get("q_transform")) == \
        ("gumbel", 64, 64, "min_max")
    assert (s.get("max_num_considered_actions"), s.get("dirichlet_alpha"), s.get("root_noise"),
            s.get("temperature")) == (8, 0.3, True, 0.5)
    assert parse_spec("mcts:ckpt=old").get("net") == "old"  # the deprecated key still works
    s = parse_spec("av:net=p,temperature=1,temperature_plies=8,repetition_draw=false,seed=2,repetition_count=3")
    assert (s.get("temperature_plies"), s.get("repetition_draw"), s.get("seed"), s.get("repetition_count")) == \
        (8, False, 2, 3)


@pytest.mark.parametrize("text, message", [
    ("mcts:net=x,policy=alphabeta", "bad value 'alphabeta' for 'policy'"),
    ("mcts:net=x,q_transform=max", "bad value 'max' for 'q_transform'"),
    ("mcts:net=x,num_simulations=0", "bad value '0' for 'num_simulations'"),
    ("mcts:net=x,sims=4,num_simulations=8", "'num_simulations' given twice"),
    ("mcts:net=x,bogus=1", "unknown key 'bogus'"),
    ("policy:net=x,policy=gumbel", "unknown key 'policy'"),
    ("sv:net=x,repetition_draw=maybe", "bad value 'maybe' for 'repetition_draw'"),
    ("av:net=x,repetition_count=4", "bad value '4' for 'repetition_count'"),
    ("alphabeta", "unknown agent 'alphabeta'"),
    ("stockfish:skil=3", "unknown key 'skil'"),
    ("stockfish:skill=21", "bad value '21' for 'skill'"),
    ("stockfish:nodes=-5", "bad value '-5' for 'nodes'"),
    ("stockfish:nodes=ten", "bad value 'ten' for 'nodes'"),
    ("mcts:sims=10", "mcts needs 'net='"),
    ("uci", "uci needs 'cmd='"),
    ('uci:cmd="unterminated', "unterminated quote"),
    ("stockfish:nodes=1,nodes=2", "'nodes' given twice"),
    ("stockfish:nodes", "'nodes' is not key=value"),
    ("policy:net=x,temperature=-1", "bad value '-1' for 'temperature'"),
])
def test_bad_specs_name_the_problem(text, message):
    with pytest.raises(SpecError, match=message) as err:
        parse_spec(text)
    assert text.split(":")[0] in str(err.value) and "\n" not in str(err.value)


def test_missing_network_directory_and_engines(tmp_path):
    missing = tmp_path / "nope"
    for kind in ("mcts", "policy", "av", "sv", "bc"):
        with pytest.raises(FileNotFoundError, match=f"network directory '{missing}' not found"):
            make_agent(f"{kind}:net={missing}")
    with pytest.raises(FileNotFoundError, match="Stockfish not found at /no/stockfish"):
        make_agent("stockfish:path=/no/stockfish")
    with pytest.raises(FileNotFoundError, match="engine 'no-such-engine-xyz' not found"):
        make_agent('uci:cmd="no-such-engine-xyz --uci"')
    with pytest.raises(FileNotFoundError, match="engine 'no-such-engine-xyz' not found"):
        check_agent("uci:cmd=no-such-engine-xyz")
    # A program that is not a UCI engine: a clear error, not a hang or a traceback.
    with pytest.raises(FileNotFoundError, match="did not start as a UCI engine"):
        make_agent(f'uci:cmd="{sys.executable} -c pass"')


def test_non_chess_network_directory_is_rejected(tmp_path):
    net = tmp_path / "network"
    net.mkdir()
    with pytest.raises((ValueError, FileNotFoundError), match=str(net)):
        make_agent(f"policy:net={net}")  # a directory without network.yaml


def test_random_agent_plays_legal_moves_reproducibly():
    a, b = make_agent("random:seed=3"), make_agent("random:seed=3")
    board = chess.Board()
    for _ in range(20):
        move, info = a.select(board)
        assert move in board.legal_moves and b.select(board)[0] == move
        assert info["pv"] == [move]
        board.push(move)
