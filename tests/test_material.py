"""games/material.py against python-chess: the material balance of real positions, and the rewards an
adjudicated game gives each pgx player id."""
from __future__ import annotations

import random

import chess
import numpy as np
import pytest

import games
from games import chess_bridge, material

VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}


def reference_balance(board: chess.Board) -> float:
    """python-chess: the side to move's material minus the opponent's, in pawns."""
    mine = sum(VALUES[p.piece_type] * (1 if p.color == board.turn else -1) for p in board.piece_map().values())
    return float(mine)


def random_positions(n: int, seed: int = 0) -> list[chess.Board]:
    """Positions of random games (captures, promotions, both sides to move)."""
    rng, boards = random.Random(seed), []
    while len(boards) < n:
        board = chess.Board()
        for _ in range(rng.randrange(10, 160)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        boards.append(board)
    return boards


@pytest.mark.parametrize("white_player", [0, 1])
def test_the_balance_is_python_chess_material_from_the_side_to_move(white_player):
    boards = random_positions(64)
    expected = np.array([reference_balance(b) for b in boards])
    assert (expected > 0).any() and (expected < 0).any() and len({b.turn for b in boards}) == 2
    states = chess_bridge.fens_to_states([b.fen() for b in boards], white_player=white_player)
    np.testing.assert_array_equal(np.asarray(material.balance(states)), expected)
    observation = np.asarray(games.make("chess").observe(states))  # what the learner reads the balance from
    np.testing.assert_array_equal(np.asarray(material.observation_balance(observation)), expected)


@pytest.mark.parametrize("white_player", [0, 1])
def test_adjudication_gives_the_side_ahead_by_the_margin_the_win(white_player):
    fens = ["rnbqkbnr/ppp1pppp/8/3P4/8/8/PPPP1PPP/RNBQKBNR b KQkq - 0 2",  # white a pawn up, black to move
            "rnb1kbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNB1KBNR w KQkq - 0 3",  # no queens: level
            "4k3/8/8/8/8/8/3q4/4K3 w - - 0 1",  # black a queen up, white to move
            "4k3/8/8/8/8/8/3n4/4K3 b - - 0 1"]  # black a knight up, black to move
    rewards = np.asarray(material.adjudicate(chess_bridge.fens_to_states(fens, white_player=white_player), 3.0))
    white_scores = rewards[:, white_player]
    np.testing.assert_array_equal(white_scores, [0.0, 0.0, -1.0, -1.0])  # a pawn is inside the 3-pawn margin
    np.testing.assert_array_equal(rewards[:, 1 - white_player], -white_scores)
    one_pawn = np.asarray(material.adjudicate(chess_bridge.fens_to_states(fens[:1], white_player=white_player), 1.0))
    assert one_pawn[0, white_player] == 1.0 and one_pawn[0, 1 - white_player] == -1.0


@pytest.mark.parametrize("overrides, problem", [
    (["actors.adjudicate_plies=40"], "chess material"),  # tic-tac-toe has no material
    (["actors.adjudicate_margin=0"], "adjudicate_margin must be > 0"),
    (["actors.adjudicate_plies=-1"], "adjudicate_plies"),
    (["learner.material_value=0.5"], "material_value reads chess material"),
    (["learner.material_value=1.5"], "material_value must be in"),
])
def test_adjudication_settings_that_cannot_act_are_one_clear_error(overrides, problem):
    from pathlib import Path

    from configs.loader import ConfigError, load
    from selfplay.config import SelfPlayConfig
    with pytest.raises(ConfigError, match=problem):
        load(SelfPlayConfig, Path(__file__).resolve().parents[1] / "configs/tic_tac_toe.yaml", overrides)


def test_the_material_target_is_lichess_win_curve_and_fades_to_the_outcome():
    """learner.material_value: target = (1 - m) outcome + m tanh(0.184 x lead), m falling linearly to 0."""
    import jax.numpy as jnp

    from learner.config import LearnerConfig
    from learner.train import material_target, value_target
    from replay.messages import TrainingBatch
    cfg = LearnerConfig(material_value=0.5, material_value_steps=100, q_ratio=0.5)
    lead = jnp.array([9.0, -3.0, 0.0])
    curve = np.tanh(0.00368208 * 100 * np.array([9.0, -3.0, 0.0]) / 2)  # 2 P(win) - 1 at 900, -300, 0 cp
    np.testing.assert_allclose(curve[:2], [0.93, -0.50], atol=0.01)
    batch = TrainingBatch(observation=jnp.zeros((3, 1)), legal_actions=jnp.zeros((3, 1), jnp.int32),
                          policy=jnp.ones((3, 1)), z=jnp.array([0.0, 1.0, -1.0]), q=jnp.array([0.2, 0.2, 0.2]))
    outcome = 0.5 * np.array([0.0, 1.0, -1.0]) + 0.5 * 0.2  # q_ratio's mix comes first
    for step, share in ((0, 0.5), (50, 0.25), (100, 0.0), (500, 0.0)):
        m = material_target(cfg, lead, jnp.asarray(step))
        np.testing.assert_allclose(m.value, curve, rtol=1e-6)
        np.testing.assert_allclose(m.share, share, rtol=1e-6)
        np.testing.assert_allclose(value_target(cfg, batch, material=m), (1 - share) * outcome + share * curve,
                                   rtol=1e-6, atol=1e-7)
    held = LearnerConfig(material_value=0.3)  # material_value_steps 0: the share never falls
    np.testing.assert_allclose(material_target(held, lead, jnp.asarray(10_000)).share, 0.3, rtol=1e-6)


def test_a_network_trained_on_drawn_games_with_the_material_target_learns_what_a_queen_is_worth():
    """The jitted train step on real chess observations: every game drawn (z = 0), so only the
    material part can teach the value that the side a queen up is winning."""
    import jax

    import models
    from learner.config import LearnerConfig
    from learner.train import init_train_state, make_train_step
    from models.network import NetworkConfig
    from models.resnet import ResNetConfig
    from replay.messages import TrainingBatch
    game = games.make("chess")
    net = models.make_network(NetworkConfig(resnet=ResNetConfig(num_blocks=1, filters=8, value_hidden=8)), game.spec)
    fens = ["3qk3/8/8/8/8/8/8/4K3 w - - 0 1", "3qk3/8/8/8/8/8/8/4K3 b - - 0 1",  # black a queen up
            "4k3/8/8/8/8/8/8/3QK3 w - - 0 1", "4k3/8/8/8/8/8/8/3QK3 b - - 0 1",  # white a queen up
            "3qk3/8/8/8/8/8/8/3QK3 w - - 0 1", "3qk3/8/8/8/8/8/8/3QK3 b - - 0 1"]  # level
    obs = np.asarray(game.observe(chess_bridge.fens_to_states(fens)))
    W = 8
    batch = TrainingBatch(observation=obs, legal_actions=np.tile(np.arange(W, dtype=np.int32), (6, 1)),
                          policy=np.full((6, W), 1 / W, np.float32), z=np.zeros(6, np.float32))
    lead = np.asarray(material.observation_balance(obs))
    np.testing.assert_array_equal(lead, [-9, 9, 9, -9, 0, 0])
    cfg = LearnerConfig(lr_values=(0.05,), lr_boundaries=(), batch_size=6, material_value=1.0)
    state = init_train_state(net, cfg, obs[:1], jax.random.PRNGKey(0))
    step = make_train_step(net, cfg, material_of=material.observation_balance)
    for _ in range(300):
        state, _ = step(state, batch)
    v = np.asarray(net.apply({"params": state.params, "batch_stats": state.batch_stats}, obs, train=False).value)
    np.testing.assert_allclose(v, np.tanh(0.184104 * lead), atol=0.15)  # the side a queen up reads ~ +0.93
    with pytest.raises(ValueError, match="material_value needs the game's material"):
        make_train_step(net, cfg)
