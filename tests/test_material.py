"""games/material.py against python-chess: the material balance of real positions, and the rewards an
adjudicated game gives each pgx player id."""
from __future__ import annotations

import random

import chess
import numpy as np
import pytest

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
])
def test_adjudication_settings_that_cannot_act_are_one_clear_error(overrides, problem):
    from pathlib import Path

    from configs.loader import ConfigError, load
    from selfplay.config import SelfPlayConfig
    with pytest.raises(ConfigError, match=problem):
        load(SelfPlayConfig, Path(__file__).resolve().parents[1] / "configs/tic_tac_toe.yaml", overrides)
