"""Network agents (policy prior, MCTS) on a tiny untrained ResNet network directory, alone and behind UCI."""
import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games
from arena import SpecError, make_agent
from arena.play.openings import Book
from arena.play.uci import UciEngine
from games import chess_bridge
from models import NetworkConfig, ResNetConfig, make_network, network_dir
from runtime.data import data_file

pytestmark = pytest.mark.slow


def _save_network(directory, metadata=None):
    cfg = NetworkConfig(family="resnet", resnet=ResNetConfig(num_blocks=1, filters=8, value_hidden=8))
    module = make_network(cfg, games.make("chess").spec)
    variables = module.init(jax.random.PRNGKey(0), jnp.zeros((1, 8, 8, 119)), train=False)
    return str(network_dir.save(directory, cfg, variables, game="chess", metadata=metadata))


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    return _save_network(tmp_path_factory.mktemp("net") / "network")


def _reference_policy_move(net_dir, board):
    """Argmax of the legal network logits, computed directly from the bridge and the module."""
    ck = network_dir.load(net_dir)
    state = chess_bridge.board_to_state(board)
    out = ck.module().apply(ck.variables, state.observation[None], train=False)
    logits = np.where(np.asarray(state.legal_action_mask), np.asarray(out.policy_logits[0]), -np.inf)
    return chess_bridge.pgx_action_to_move(int(np.argmax(logits)), board), float(out.value[0])


def test_policy_agent_follows_the_prior_with_history(net):
    agent = make_agent(f"policy:net={net}")
    board = Book(data_file("openings", "8moves_v3.pgn"))[1].board()  # 16 book plies of history
    for _ in range(6):  # the tracker steps forward incrementally between calls
        move, info = agent.select(board)
        expected, value = _reference_policy_move(net, board)
        assert move == expected and move in board.legal_moves
        assert info["value"] == pytest.approx(value, abs=1e-5) and -1 <= info["value"] <= 1
        board.push(move)
    # A different game (new root) is replayed from scratch and still agrees.
    other = chess.Board()
    other.push_uci("g1f3")
    assert agent.select(other)[0] == _reference_policy_move(net, other)[0]


def test_a_sampling_agent_replays_a_game_from_its_seed_and_the_game_number(net):
    agent = make_agent(f"policy:net={net},temperature=1,seed=3")

    def game(number):
        agent.reset(number)
        board = chess.Board()
        for _ in range(8):
            board.push(agent.select(board)[0])
        return [m.uci() for m in board.move_stack]

    first = game(5)
    game(6)  # whatever the agent played in between
    assert game(5) == first and game(6) != first


def test_mcts_agent_behind_uci(net):
    out = []
    engine = UciEngine(make_agent(f"mcts:net={net},sims=4"), out.append)
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


def test_mcts_agent_plays_the_recorded_search_unless_the_spec_says_otherwise(tmp_path, net):
    recorded = {"policy": "gumbel", "num_simulations": 8, "max_num_considered_actions": 4,
                "q_transform": "min_max", "root_noise": True, "temperature_plies": 30}
    gumbel_net = _save_network(tmp_path / "gumbel", metadata={"search": recorded})
    agent = make_agent(f"mcts:net={gumbel_net}")
    cfg = agent.search
    assert (cfg.policy, cfg.num_simulations, cfg.max_num_considered_actions, cfg.q_transform) == \
        ("gumbel", 8, 4, "min_max")
    assert not cfg.root_noise and cfg.temperature_plies == 0  # arena: no root noise, greedy
    move, info = agent.select(chess.Board())
    assert move in chess.Board().legal_moves and info["nodes"] == 8
    # spec keys override any field (sims is num_simulations); the old ckpt= still names the directory
    agent = make_agent(f"mcts:ckpt={gumbel_net},sims=4,policy=puct,q_transform=fpu,fpu_reduction=0.2")
    assert (agent.search.policy, agent.search.num_simulations, agent.search.q_transform,
            agent.search.fpu_reduction, agent.search.max_num_considered_actions) == ("puct", 4, "fpu", 0.2, 4)
    # a network directory without a recorded search: the defaults (PUCT, 800 simulations)
    plain = make_agent(f"mcts:net={net}").search
    assert (plain.policy, plain.num_simulations, plain.root_noise) == ("puct", 800, False)
    for spec, message in [(f"mcts:net={gumbel_net},polcy=puct", "unknown key 'polcy'"),
                          (f"mcts:net={gumbel_net},policy=alphabeta", "bad value 'alphabeta' for 'policy'"),
                          (f"mcts:net={gumbel_net},sims=0", "bad value '0' for 'sims'"),
                          (f"mcts:net={gumbel_net},max_num_considered_actions=many",
                           "bad value 'many' for 'max_num_considered_actions'")]:
        with pytest.raises(SpecError, match=message) as err:
            make_agent(spec)
        assert "\n" not in str(err.value)
