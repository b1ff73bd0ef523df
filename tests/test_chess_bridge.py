"""pgx state <-> FEN/board, pgx actions -> PGN, and the bridge's errors."""
import itertools

import chess
import jax
import numpy as np
import pytest

from games import chess_bridge as cb
from runtime.data import data_file


def _epd_fens(n):
    with open(data_file("openings", "UHO_4060_v4_sample10k.epd")) as f:
        lines = list(itertools.islice(f, n))
    return [chess.Board(line.strip()).fen() for line in lines]


def test_fen_round_trip_and_legal_moves_on_opening_positions():
    fens = _epd_fens(60) + [
        "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1",
        "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # en passant from a FEN
        "8/P7/8/8/8/8/6kp/K7 b - - 0 70",
    ]
    for fen in fens:
        board = chess.Board(fen)
        state = cb.fen_to_state(fen)
        assert cb.state_to_fen(state) == fen
        assert cb.state_to_board(state) == board
        assert set(cb.legal_moves_of_mask(state.legal_action_mask, board)) == set(board.legal_moves), fen
        assert int(state.current_player) == (0 if board.turn == chess.WHITE else 1)


def test_fens_to_states_equals_each_fen_to_state_across_chunks(monkeypatch):
    monkeypatch.setattr(cb, "FENS_CHUNK", 7)  # 20 FENs: two full chunks and a padded one
    fens = _epd_fens(17) + ["r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1",
                            "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
                            "8/P7/8/8/8/8/6kp/K7 b - - 0 70"]
    for white_player in (0, 1):
        batched = cb.fens_to_states(fens, white_player)
        for i, fen in enumerate(fens):
            one, row = jax.tree.leaves(cb.fen_to_state(fen, white_player)), jax.tree.leaves(cb.state_at(batched, i))
            assert len(one) == len(row)
            for a, b in zip(one, row):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=fen)
    with pytest.raises(ValueError, match="bad FEN 'xx'"):
        cb.fens_to_states(fens[:3] + ["xx"])


@pytest.mark.parametrize("fen, problem", [
    ("xx", "expected 8 rows"),
    ("8/8/8/8/8/8/8/8 w - - 0 1", "no white king"),
    ("4k3/8/8/8/8/8/8/4R1K1 w - - 0 1", "not to move is in check"),
    ("4k3/8/8/8/8/QQQQQQQQ/QQQQQQQQ/QQQQKQQQ w - - 0 1", "more than 16 white pieces"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e3 0 1", "invalid en-passant"),
])
def test_bad_fens_are_value_errors_naming_them(fen, problem):
    with pytest.raises(ValueError, match="bad FEN") as error:
        cb.fen_to_state(fen)
    assert problem in str(error.value) and fen in str(error.value)


def test_board_to_state_replays_the_history_for_repetition():
    board = chess.Board()
    for uci in "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1".split():
        board.push_uci(uci)
    assert not bool(cb.board_to_state(board).terminated)
    board.push_uci("f6g8")  # the start position for the third time
    state = cb.board_to_state(board)
    assert bool(state.terminated) and np.asarray(state.rewards).tolist() == [0, 0]
    # From the FEN alone pgx knows no history, so nothing repeats.
    assert not bool(cb.fen_to_state(board.fen()).terminated)
    board.push_uci("g1f3")  # python-chess lets the game go on; pgx had ended it
    with pytest.raises(ValueError, match="ended the game"):
        cb.board_to_state(board)


def test_white_player_sets_the_player_ids():
    state = cb.board_to_state(chess.Board(), white_player=1)
    assert int(state.current_player) == 1
    board = chess.Board()
    board.push_uci("e2e4")
    assert int(cb.board_to_state(board, white_player=1).current_player) == 0
    with pytest.raises(ValueError, match="white_player"):
        cb.fen_to_state(chess.STARTING_FEN, white_player=2)


def _actions(ucis, fen=chess.STARTING_FEN):
    board, actions = chess.Board(fen), []
    for uci in ucis:
        actions.append(cb.uci_to_pgx_action(uci, board.turn == chess.WHITE))
        board.push_uci(uci)
    return actions


def test_actions_to_pgn_scholars_mate():
    game = cb.actions_to_pgn(_actions("e2e4 e7e5 f1c4 b8c6 d1h5 g8f6 h5f7".split()), headers={"Event": "t"})
    assert str(game.mainline_moves()) == "1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7#"
    assert game.headers["Result"] == "1-0" and game.headers["Event"] == "t"


def test_actions_to_pgn_promotions_from_a_fen():
    fen = "8/P6k/8/8/8/8/1p5K/8 w - - 0 60"
    # a7a8 is the plain pgx move: a queen promotion; b2b1n is an under-promotion.
    actions = _actions(["a7a8q", "b2b1n"], fen)
    assert cb.pgx_action_to_uci(actions[0], True) == "a7a8"
    game = cb.actions_to_pgn(actions, fen=fen)
    assert game.headers["FEN"] == fen
    assert [m.uci() for m in game.mainline_moves()] == ["a7a8q", "b2b1n"]
    assert str(game.mainline_moves()) == "60. a8=Q b1=N"


def test_illegal_action_names_the_ply():
    actions = _actions(["e2e4", "e7e5"]) + [cb.uci_to_pgx_action("e1e3", True)]
    with pytest.raises(ValueError, match="ply 2"):
        cb.actions_to_pgn(actions)


def test_vectorised_conversions_match_the_scalar_ones():
    actions = np.array([89, 2426, 2367, 438, 1030])
    for white in (True, False):
        ucis = cb.pgx_actions_to_uci(actions, white)
        assert list(ucis) == [cb.pgx_action_to_uci(a, white) for a in actions]
        np.testing.assert_array_equal(cb.ucis_to_pgx_actions(ucis, white), actions)
    with pytest.raises(ValueError, match="not a move"):
        cb.pgx_action_to_uci(7, True)  # a1 under-promotion: never a move
