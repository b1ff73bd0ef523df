"""pgx actions, the 1858 compact space and the 1968 UCI vocabulary, on puzzles and by geometry."""
import csv

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from games import chess_bridge as cb
from games import compact_actions as ca
from games import uci_vocab as uv
from runtime.data import data_file

FILES = "abcdefgh"


def _name(file, rank):
    return f"{FILES[file]}{rank + 1}"


def _geometric_moves():
    """Every queen-style or knight move between two squares, as UCI (1792 of them)."""
    moves = set()
    for f0 in range(8):
        for r0 in range(8):
            for f1 in range(8):
                for r1 in range(8):
                    df, dr = abs(f1 - f0), abs(r1 - r0)
                    if (df, dr) != (0, 0) and (df == 0 or dr == 0 or df == dr or {df, dr} == {1, 2}):
                        moves.add(_name(f0, r0) + _name(f1, r1))
    return moves


def _promotions(from_rank, to_rank, pieces):
    return {_name(f, from_rank) + _name(t, to_rank) + p
            for f in range(8) for t in range(max(f - 1, 0), min(f + 2, 8)) for p in pieces}


def test_vocabulary_is_1968_sorted_moves():
    assert len(uv.MOVES) == 1968 == uv.NUM_MOVES
    assert list(uv.MOVES) == sorted(set(uv.MOVES))
    expected = _geometric_moves() | _promotions(6, 7, "qrbn") | _promotions(1, 0, "qrbn")
    assert len(_geometric_moves()) == 1792 and set(uv.MOVES) == expected
    for index in (0, 1000, 1967):
        assert uv.move_to_index(uv.index_to_move(index)) == index
    assert uv.MOVES[0] == "a1a2" and uv.MOVES[-1] == "h8h7"


def test_compact_space_is_1858_moves_from_the_side_to_move():
    assert len(ca.COMPACT_TO_PGX) == 1858 == ca.NUM_COMPACT_ACTIONS
    assert set(ca.COMPACT_UCI) == _geometric_moves() | _promotions(6, 7, "rbn")
    np.testing.assert_array_equal(ca.PGX_TO_COMPACT[ca.COMPACT_TO_PGX], np.arange(1858))
    assert (ca.PGX_TO_COMPACT < 0).sum() == 4672 - 1858
    # action = from * 73 + plane, from counted file-major (a1=0, a2=1, ...): check the from-square.
    from_pgx = ca.COMPACT_TO_PGX // 73
    from_uci = np.array([_name(sq // 8, sq % 8) for sq in from_pgx])
    np.testing.assert_array_equal(from_uci, np.array([u[:2] for u in ca.COMPACT_UCI]))
    # Black's moves are white's with ranks mirrored.
    mirror = {str(r): str(9 - int(r)) for r in range(1, 9)}
    black = ["".join(mirror.get(c, c) for c in u) for u in ca.COMPACT_UCI]
    assert black == list(ca.COMPACT_UCI_ABSOLUTE[1])


@pytest.mark.parametrize("uci, white, action", [
    ("e2e4", True, (4 * 8 + 1) * 73 + 17),   # e2 = 33, queen-move up 2 = plane 17
    ("e7e5", False, (4 * 8 + 1) * 73 + 17),  # black's e7e5 is white's e2e4 mirrored
    ("g1f3", True, (6 * 8 + 0) * 73 + 68),   # knight +2 ranks, -1 file = plane 65 + 3
    ("e1g1", True, (4 * 8 + 0) * 73 + 31),   # castling = king two squares right (plane 30 + 1)
    ("e8c8", False, (4 * 8 + 0) * 73 + 28),  # black castles long: two squares left (plane 29 - 1)
    ("a7a8r", True, (0 * 8 + 6) * 73 + 0),   # rook under-promotion, straight
    ("b7a8n", True, (1 * 8 + 6) * 73 + 8),   # knight (2) toward the a-file (2): plane 8
    ("b2a1n", False, (1 * 8 + 6) * 73 + 8),
    ("g7h8b", True, (6 * 8 + 6) * 73 + 4),   # bishop (1) toward the h-file (1): plane 4
    ("e7e8q", True, (4 * 8 + 6) * 73 + 16),  # queen promotion = the plain move up 1
    ("e7e8", True, (4 * 8 + 6) * 73 + 16),
])
def test_pgx_actions_by_hand(uci, white, action):
    assert cb.uci_to_pgx_action(uci, white) == action
    assert cb.pgx_action_to_uci(action, white) == uci.rstrip("q")


@pytest.mark.parametrize("uci, white", [("e2e1q", True), ("e7e8q", False), ("e2e2", True), ("a1b4", True),
                                        ("zz", True), ("e7e8k", True)])
def test_impossible_moves_are_value_errors(uci, white):
    with pytest.raises(ValueError, match=uci):
        cb.uci_to_pgx_action(uci, white)


def test_vocabulary_rejects_unknown_moves():
    with pytest.raises(ValueError, match="e7e8k"):
        uv.move_to_index("e7e8k")
    with pytest.raises(ValueError):
        uv.index_to_move(1968)


def _puzzles():
    rows = []
    for name in ("lichess_puzzles_themed.csv", "lichess_puzzles_10k_untagged.csv"):
        with open(data_file("puzzles", name), newline="") as f:
            rows += [(row["FEN"], row["Moves"].split()) for row in csv.DictReader(f)]
    return rows


def _check_move(board, move):
    uci, white = move.uci(), board.turn == chess.WHITE
    assert uv.index_to_move(uv.move_to_index(uci)) == uci
    action = cb.uci_to_pgx_action(uci, white)
    assert cb.pgx_action_to_move(action, board) == move
    compact = ca.uci_to_compact(uci, white)
    assert compact >= 0 and ca.COMPACT_TO_PGX[compact] == action
    plain = uci[:4] if move.promotion == chess.QUEEN else uci
    assert ca.compact_to_uci(compact, white) == plain
    assert uv.VOCAB_TO_PGX[0 if white else 1, uv.move_to_index(uci)] == action


def test_every_puzzle_position_and_solution_move_maps_and_round_trips():
    puzzles = _puzzles()
    assert len(puzzles) == 18057
    checked = 0
    for fen, moves in puzzles:
        board = chess.Board(fen)
        for uci in moves:
            move = chess.Move.from_uci(uci)
            assert board.is_legal(move)
            _check_move(board, move)
            board.push(move)
            checked += 1
    assert checked > 70000


def test_all_legal_moves_of_puzzle_positions_map_into_both_spaces():
    # Vectorised over every legal move of every puzzle's starting position.
    frm, to, promo, white, ucis = [], [], [], [], []
    for fen, _ in _puzzles():
        board = chess.Board(fen)
        for move in board.legal_moves:
            frm.append(move.from_square), to.append(move.to_square), promo.append(move.promotion or 0)
            white.append(board.turn == chess.WHITE), ucis.append(move.uci())
    colour = np.where(white, 0, 1)
    actions = cb.MOVE_TO_PGX[colour, frm, to, promo]
    assert (actions >= 0).all()
    assert (ca.PGX_TO_COMPACT[actions] >= 0).all()
    np.testing.assert_array_equal(cb.PGX_FROM_SQUARE[colour, actions], frm)
    np.testing.assert_array_equal(cb.PGX_TO_SQUARE[colour, actions], to)
    vocab = np.array([uv.MOVE_TO_INDEX[u] for u in ucis])
    np.testing.assert_array_equal(uv.VOCAB_TO_PGX[colour, vocab], actions)
    np.testing.assert_array_equal(cb.pgx_actions_to_uci(actions, white),
                                  [u[:4] if u.endswith("q") else u for u in ucis])


def test_batched_compact_legal_mask_matches_python_chess():
    fens = [fen for fen, _ in _puzzles()[::300]][:48]
    boards = [chess.Board(fen) for fen in fens]
    states = jax.tree.map(lambda *xs: jnp.stack(xs), *[cb.fen_to_state(fen) for fen in fens])
    compact = np.asarray(jax.jit(ca.legal_mask)(states.legal_action_mask))
    assert compact.shape == (len(fens), 1858)
    for b, board in enumerate(boards):
        white = board.turn == chess.WHITE
        expected = {ca.uci_to_compact(m.uci(), white) for m in board.legal_moves}
        assert set(np.flatnonzero(compact[b]).tolist()) == expected, fens[b]
        # The same moves in the 1968 vocabulary, through pgx actions and the board.
        vocab = {uv.pgx_action_to_index(a, board) for a in ca.COMPACT_TO_PGX[compact[b]]}
        assert vocab == set(np.flatnonzero(uv.board_legal_mask(board)).tolist())
    # Round trips between the spaces, batched and jitted.
    pgx_actions = jnp.asarray(ca.COMPACT_TO_PGX)
    assert (ca.from_pgx(ca.to_pgx(jnp.arange(1858))) == jnp.arange(1858)).all()
    assert (ca.to_pgx(ca.from_pgx(pgx_actions)) == pgx_actions).all()
    logits = jnp.arange(2 * 1858, dtype=jnp.float32).reshape(2, 1858)
    wide = ca.scatter_to_pgx(logits)
    assert wide.shape == (2, 4672) and jnp.isneginf(wide).sum() == 2 * (4672 - 1858)
    assert (ca.gather_from_pgx(wide) == logits).all()
