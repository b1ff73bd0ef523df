"""games/chess_observation.py against pgx's own observation of the same FEN, exactly."""
import random

import chess
import numpy as np

from games import chess_bridge
from games.chess_observation import boards_to_observations


def _positions(games: int, seed: int) -> list[chess.Board]:
    """Boards from random games: both sides to move, castling rights lost one by one, en-passant
    squares, captures, promotions and long no-progress counts."""
    rng, boards = random.Random(seed), []
    for _ in range(games):
        board = chess.Board()
        while not board.is_game_over() and board.ply() < 160:
            board.push(rng.choice(list(board.legal_moves)))
            boards.append(board.copy(stack=False))
    return boards


def test_equals_pgx_observation_on_random_games():
    boards = _positions(games=6, seed=3)
    picked = boards[::3] + [chess.Board(), chess.Board("r3k2r/8/8/3pP3/8/8/8/R3K2R w Kq d6 0 1"),
                            chess.Board("4k3/8/8/8/8/8/8/4K2R b K - 97 120")]
    expected = np.asarray(chess_bridge.fens_to_states([b.fen() for b in picked]).observation)
    got = boards_to_observations(picked)
    assert got.dtype == np.float32 and got.shape == expected.shape == (len(picked), 8, 8, 119)
    assert np.array_equal(got, expected)
    assert {b.turn for b in picked} == {chess.WHITE, chess.BLACK}
    assert any(b.ep_square is not None for b in picked) and any(b.halfmove_clock > 20 for b in picked)


def test_ignores_the_move_stack():
    board = chess.Board()
    for uci in ("g1f3", "g8f6", "f3g1", "f6g8"):
        board.push_uci(uci)
    assert np.array_equal(boards_to_observations([board]), boards_to_observations([chess.Board(board.fen())]))


def test_a_network_teacher_reads_the_values_of_pgx_states():
    """distill's teacher encodes boards this way: its values equal the network's on pgx States."""
    import jax

    import models
    from distill.selfplay_corpus import network_teacher

    boards = _positions(games=1, seed=5)[:40:4]
    network = models.load_evaluation("networks/chess_distilled_4x64")
    obs = chess_bridge.fens_to_states([b.fen() for b in boards]).observation
    expected = (np.asarray(jax.jit(network.evaluate)(network.variables, obs).value) + 1) / 2
    np.testing.assert_allclose(network_teacher("networks/chess_distilled_4x64", batch=8)(boards), expected, atol=1e-6)
