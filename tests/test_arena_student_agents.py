"""Searchless students (arena/agents/student.py) behind the av:/sv:/bc: specs, on tiny untrained nets."""
import chess
import jax
import numpy as np
import pytest

from arena import make_agent
from models import NetworkConfig, SearchlessConfig, make_student, network_dir

pytestmark = pytest.mark.slow

_PREDICTORS = {"av": "action_value", "sv": "state_value", "bc": "behavioral_cloning"}


def _student(tmp_path, target):
    cfg = NetworkConfig(family="searchless", searchless=SearchlessConfig(
        predictor=_PREDICTORS[target], num_layers=1, num_heads=2, embedding_dim=16,
        num_return_buckets=8))
    model = make_student(cfg)
    tokens = np.zeros((1, cfg.searchless.input_length), np.int32)
    variables = model.init(jax.random.PRNGKey(1), tokens)
    return network_dir.save(tmp_path / target, cfg, variables, metadata={"target": target})


@pytest.mark.parametrize("target", ["sv", "bc"])
def test_searchless_agent_plays_legal_moves(tmp_path, target):
    agent = make_agent(f"{target}:net={_student(tmp_path, target)}")
    board = chess.Board()
    for _ in range(3):
        move, info = agent.select(board)
        assert move in board.legal_moves and info["pv"] == [move]
        assert ("value" in info) == (target != "bc")
        if target != "bc":
            assert -1 <= info["value"] <= 1
        board.push(move)
    agent.close()


def test_spec_kind_must_match_the_student(tmp_path):
    path = _student(tmp_path, "bc")
    with pytest.raises(ValueError, match=r"bc student: play it as bc:net=\.\.\., not sv:"):
        make_agent(f"sv:net={path}")
