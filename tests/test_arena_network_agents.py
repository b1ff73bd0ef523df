"""Network agents (policy prior, MCTS) on a tiny untrained ResNet checkpoint, alone and behind UCI."""
import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games
from arena import make_agent
from arena.openings import Book
from arena.uci_engine import UciEngine
from configs.paths import data_file
from games import chess_bridge
from models import NetworkConfig, ResNetConfig, make_network
from models import checkpoint

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    cfg = NetworkConfig(family="resnet", resnet=ResNetConfig(num_blocks=1, filters=8, value_hidden=8))
    net = make_network(cfg, games.make("chess").spec)
    variables = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 8, 8, 119)), train=False)
    return str(checkpoint.save(tmp_path_factory.mktemp("net") / "ckpt", cfg, variables, game="chess"))


def _reference_policy_move(ckpt_dir, board):
    """Argmax of the legal network logits, computed directly from the bridge and the module."""
    ck = checkpoint.load(ckpt_dir)
    state = chess_bridge.board_to_state(board)
    out = ck.module().apply(ck.variables, state.observation[None], train=False)
    logits = np.where(np.asarray(state.legal_action_mask), np.asarray(out.policy_logits[0]), -np.inf)
    return chess_bridge.pgx_action_to_move(int(np.argmax(logits)), board), float(out.value[0])


def test_policy_agent_follows_the_prior_with_history(ckpt):
    agent = make_agent(f"policy:ckpt={ckpt}")
    board = Book(data_file("openings", "8moves_v3.pgn"))[1].board()  # 16 book plies of history
    for _ in range(6):  # the tracker steps forward incrementally between calls
        move, info = agent.select(board)
        expected, value = _reference_policy_move(ckpt, board)
        assert move == expected and move in board.legal_moves
        assert info["value"] == pytest.approx(value, abs=1e-5) and -1 <= info["value"] <= 1
        board.push(move)
    # A different game (new root) is replayed from scratch and still agrees.
    other = chess.Board()
    other.push_uci("g1f3")
    assert agent.select(other)[0] == _reference_policy_move(ckpt, other)[0]


def test_mcts_agent_behind_uci(ckpt):
    out = []
    engine = UciEngine(make_agent(f"mcts:ckpt={ckpt},sims=4"), out.append)
    engine.handle("uci")
    assert "option name Simulations type spin default 4 min 1 max 100000" in out
    engine.handle("setoption name Simulations value 6")
    engine.handle("setoption name Simulations value lots")
    assert out[-1].startswith("info string error: setoption: simulations must be an integer")
    board = chess.Board()
    for uci in ("e2e4", "e7e5"):
        board.push_uci(uci)
    for go in ("go nodes 6", "go"):
        engine.handle("position startpos moves " + " ".join(m.uci() for m in board.move_stack))
        engine.handle(go)
        engine.handle("stop")
        bestmove = chess.Move.from_uci(out[-1].split()[1])
        assert out[-1].startswith("bestmove") and bestmove in board.legal_moves
        info = out[-2].split()
        assert info[:2] == ["info", "depth"] and info[info.index("nodes") + 1] == "6"
        assert "cp" in info and info[info.index("pv") + 1] == bestmove.uci()
        pv_board = board.copy()
        for uci in info[info.index("pv") + 1:]:  # the whole principal variation is legal
            move = chess.Move.from_uci(uci)
            assert move in pv_board.legal_moves
            pv_board.push(move)
        board.push(bestmove)
