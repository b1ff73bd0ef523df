"""Chessformer 64 x 112 square encoding against hand-computed features and mirrored boards."""
import chess
import numpy as np

from games import square_encoding as se

OUR = {p: i for i, p in enumerate("PNBRQK")}  # feature index of our pieces; theirs = +6


def _board(*ucis, fen=chess.STARTING_FEN):
    board = chess.Board(fen)
    for uci in ucis:
        board.push_uci(uci)
    return board


def _frame(x, t):
    return x[:, 13 * t:13 * t + 13]


def test_start_position_by_hand():
    x = se.encode_board(chess.Board())
    assert x.shape == (64, 112) and x.dtype == np.float32
    assert x[chess.E1, OUR["K"]] == 1 and x[chess.E8, 6 + OUR["K"]] == 1
    assert x[chess.A2:chess.H2 + 1, OUR["P"]].all() and x[chess.A7:chess.H7 + 1, 6 + OUR["P"]].all()
    assert x[:, :12].sum() == 32 and x[chess.E4, :104].sum() == 0
    assert (x[:, 104:108] == 1).all()  # all castling rights
    assert (x[:, 108] == 0).all() and (x[:, 109] == 0).all()  # white to move, clock 0
    assert (x[:, 110] == 0).all() and (x[:, 111] == 1).all()


def test_flipped_for_black():
    x = se.encode_board(_board("e2e4"))  # black to move: black plays "up" from rank 1
    assert (x[:, 108] == 1).all()
    assert x[chess.E1, OUR["K"]] == 1  # black king e8 seen at e1
    assert x[chess.E2, OUR["P"]] == 1  # black pawn e7 seen at e2
    assert x[chess.E5, 6 + OUR["P"]] == 1  # white pawn e4 seen at e5
    assert x[chess.E8, 6 + OUR["K"]] == 1
    assert x[chess.E2, 6 + OUR["P"]] == 0


def test_black_equals_mirrored_white():
    # A position and its colour-mirror look the same from the side to move.
    fen = "r3k2r/pp1n1ppp/2p1b3/q7/3P4/2N2N2/PP3PPP/R2QK2R b Kq - 5 14"
    black, white = chess.Board(fen), chess.Board(fen).mirror()
    xb, xw = se.encode_board(black), se.encode_board(white)
    assert (xb[:, 108] == 1).all() and (xw[:, 108] == 0).all()
    keep = np.arange(112) != 108
    np.testing.assert_array_equal(xb[:, keep], xw[:, keep])
    assert xb[0, 104:108].tolist() == [1, 0, 0, 1]  # ours (black): q only; theirs (white): K only
    np.testing.assert_allclose(xb[:, 109], 0.05)


def test_history_frames_and_short_history_repeats_the_earliest():
    board = _board("e2e4", "e7e5", "g1f3")  # black to move, 3 plies of history
    x = se.encode_board(board)
    frames = [_frame(x, t) for t in range(8)]
    # Each frame is the board t plies ago, seen from black (the current side to move).
    for t, past in enumerate([_board("e2e4", "e7e5", "g1f3"), _board("e2e4", "e7e5"),
                              _board("e2e4"), _board()]):
        past.turn = chess.BLACK  # same perspective, repetition flags aside
        np.testing.assert_array_equal(frames[t][:, :12], se.encode_board(chess.Board(past.fen()))[:, :12])
    for t in range(4, 8):
        np.testing.assert_array_equal(frames[t], frames[3])  # the start position, repeated
    assert frames[0][chess.F6, 6 + OUR["N"]] == 1  # white knight f3 seen at f6
    assert frames[1][chess.G8, 6 + OUR["N"]] == 1 and frames[1][chess.F6, 6 + OUR["N"]] == 0

    no_history = se.encode_board(chess.Board("8/5k2/8/8/8/2K5/8/7R w - - 0 1"))
    for t in range(1, 8):
        np.testing.assert_array_equal(_frame(no_history, t), _frame(no_history, 0))


def test_repetition_flags():
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"]
    board = _board(*shuffle)  # back to the start position
    flags = se.encode_board(board)[0, 12::13]
    assert flags.tolist() == [1, 0, 0, 0, 0, 0, 0, 0]  # now = 4 plies ago; the root is not
    board.push_uci("g1f3")  # the position after 1.Nf3 again
    flags = se.encode_board(board)[0, 12::13]
    assert flags.tolist() == [1, 1, 0, 0, 0, 0, 0, 0]
    board.push_uci("g8f6")
    flags = se.encode_board(board)[0, 12::13]
    assert flags.tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    assert se.encode_board(_board("e2e4", "e7e5"))[0, 12::13].sum() == 0


def test_repetition_needs_same_castling_rights():
    # Kings step out and back: the pieces match the start but castling rights are gone.
    board = _board("e2e4", "e7e5", "e1e2", "e8e7", "e2e1", "e7e8")
    flags = se.encode_board(board)[0, 12::13]
    assert flags.sum() == 0
    assert (se.encode_board(board)[:, 104:108] == 0).all()


def test_batch_helper():
    boards = [chess.Board(), _board("e2e4"), _board("g1f3", "g8f6", "f3g1", "f6g8")]
    batch = se.encode_boards(boards)
    assert batch.shape == (3, 64, 112)
    for b, board in enumerate(boards):
        np.testing.assert_array_equal(batch[b], se.encode_board(board))
    assert se.encode_boards([]).shape == (0, 64, 112)
