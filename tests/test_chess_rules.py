"""pgx chess against python-chess: 200 seeded random games stepped as one vmapped batch.

At every ply the pgx legal-move set must equal python-chess's (castling, en passant and
(under-)promotions included) and the games must end at the same ply with the same result:
checkmate, stalemate, insufficient material, 50-move rule, threefold repetition, 512-ply cap.
Two games are scripted repetitions; some are biased (captures/promotions, quiet shuffling, long pawn-paced games) so that
every ending and special move actually occurs; the test asserts that it did.

One known difference is checked explicitly instead of hidden: pgx's position key keeps the
en-passant square after every double pawn push, python-chess (FIDE) only when the capture is
legal. So pgx may need one more repetition than FIDE when the first occurrence followed a
double push; pgx ends exactly when its own key repeats three times, and never earlier than
FIDE allows.
"""
import collections

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games
from games import chess_bridge as cb
from games import pgx_internals

N_GAMES = 200
MAX_PLIES = 512
SEED = 20261122
# Two scripted games: the start position three times (FIDE and pgx: threefold at ply 8), and
# a position first reached by a double push (FIDE: threefold at ply 9; pgx, whose key keeps
# the en-passant square, only at ply 10 when the next position occurs a third time).
START_THRICE = "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8".split()
AFTER_DOUBLE_PUSH = "e2e4 g8f6 g1f3 f6g8 f3g1 g8f6 g1f3 f6g8 f3g1 g8f6".split()
SCRIPTS = {0: START_THRICE, 1: AFTER_DOUBLE_PUSH}
# Policy of each other game: uniform, "sharp" (captures, promotions, checks), "shuffle" (quiet
# piece moves: repetitions, 50-move rule), "long" (quiet, a pawn move or capture when the
# 50-move clock runs high: the 512-ply cap).
POLICIES = ["script"] * 2 + ["uniform"] * 94 + ["sharp"] * 56 + ["shuffle"] * 32 + ["long"] * 16


def _placement(board):
    return (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings,
            board.occupied_co[chess.WHITE])


def _key_pgx(board):
    # pgx's position identity: placement, side, castling, en-passant square after any double push.
    return _placement(board), board.turn, board.clean_castling_rights(), board.ep_square


def _key_fide(board):
    ep = board.ep_square if board.has_legal_en_passant() else None
    return _placement(board), board.turn, board.clean_castling_rights(), ep


def _choose(rng, board, moves, policy):
    def pick(candidates):
        return candidates[rng.integers(len(candidates))]

    if policy == "sharp" and rng.random() < 0.8:
        forcing = [m for m in moves if m.promotion or board.is_capture(m) or board.gives_check(m)]
        if forcing:
            return pick(forcing)
    if policy in ("shuffle", "long"):
        quiet = [m for m in moves if not board.is_capture(m) and board.piece_type_at(m.from_square) != chess.PAWN]
        resets = [m for m in moves if m not in quiet]
        if policy == "long" and board.halfmove_clock >= 60 and resets:
            return pick(resets)
        if quiet and rng.random() < 0.95:
            return pick(quiet)
    return pick(moves)


def _ending(board, moves, pgx_keys, ply):
    """The reference ending (python-chess, pgx's repetition key) or None while the game goes on."""
    if not moves:
        return "checkmate" if board.is_check() else "stalemate"
    if board.is_insufficient_material():
        return "insufficient"
    if board.halfmove_clock >= 100:
        return "fifty"
    if pgx_keys[_key_pgx(board)] >= 3:
        return "threefold"
    if ply >= MAX_PLIES:
        return "cap"
    return None


@pytest.fixture(scope="module")
def played():
    """Plays the batch; returns per-game records and counters of what was seen. Row r of `states` is
    game live[r]; once half the rows have ended, the batch shrinks to the games still on (the pgx
    step, ~40% of this fixture at full size, costs in proportion to its rows; half the games end by
    ply 271, so 30% fewer rows are stepped: 43 s -> 40 s alone)."""
    game = games.make("chess")
    step = jax.jit(game.step)
    states = jax.jit(game.init)(jax.random.split(jax.random.PRNGKey(SEED), N_GAMES))
    white_id = np.asarray(game.current_player(states))  # white moves first
    rng = np.random.default_rng(SEED)
    boards = [chess.Board() for _ in range(N_GAMES)]
    pgx_keys = [collections.Counter([_key_pgx(b)]) for b in boards]
    fide_keys = [collections.Counter([_key_fide(b)]) for b in boards]
    endings, fide_first_threefold = [None] * N_GAMES, [None] * N_GAMES
    seen = collections.Counter()
    mismatches = []
    live, final_states = np.arange(N_GAMES), [None] * N_GAMES
    for ply in range(MAX_PLIES + 1):
        masks = np.asarray(game.legal_mask(states))
        terminal = np.asarray(game.terminal(states))
        rewards = np.asarray(game.rewards(states))
        actions = np.zeros(len(live), np.int32)
        for row, b in enumerate(live):
            board = boards[b]
            if endings[b] is not None:
                continue  # finished earlier; pgx keeps it unchanged
            moves = list(board.legal_moves)
            ref = _ending(board, moves, pgx_keys[b], ply)
            if bool(terminal[row]) != (ref is not None):
                mismatches.append((b, ply, "terminal", bool(terminal[row]), ref, board.fen()))
                endings[b] = (ref or "pgx-ended", ply)
                continue
            if ref is not None:
                endings[b] = (ref, ply)
                seen[ref] += 1
                white_reward = 0.0
                if ref == "checkmate":
                    white_reward = -1.0 if board.turn == chess.WHITE else 1.0
                got = (rewards[row, white_id[b]], rewards[row, 1 - white_id[b]])
                if got != (white_reward, -white_reward):
                    mismatches.append((b, ply, "rewards", got, ref, board.fen()))
                continue
            colour = 0 if board.turn == chess.WHITE else 1
            expected = np.sort(cb.MOVE_TO_PGX[colour, [m.from_square for m in moves], [m.to_square for m in moves],
                                              [m.promotion or 0 for m in moves]])
            got = np.flatnonzero(masks[row])
            if not np.array_equal(got, expected):
                mismatches.append((b, ply, "legal", cb.pgx_actions_to_uci(np.setxor1d(got, expected), colour == 0),
                                   board.fen()))
            for m in moves:
                seen["legal castling"] += board.is_castling(m)
                seen["legal en passant"] += board.is_en_passant(m)
                seen["legal underpromotion"] += m.promotion not in (None, chess.QUEEN)
            if b in SCRIPTS:
                move = chess.Move.from_uci(SCRIPTS[b][ply])
            else:
                move = _choose(rng, board, moves, POLICIES[b])
            seen["played castling"] += board.is_castling(move)
            seen["played en passant"] += board.is_en_passant(move)
            seen["played promotion"] += move.promotion == chess.QUEEN
            seen["played underpromotion"] += move.promotion not in (None, chess.QUEEN)
            actions[row] = cb.move_to_pgx_action(move, colour == 0)
            board.push(move)
            pgx_keys[b][_key_pgx(board)] += 1
            fide_keys[b][_key_fide(board)] += 1
            if fide_first_threefold[b] is None and fide_keys[b][_key_fide(board)] >= 3:
                fide_first_threefold[b] = ply + 1
        on = np.array([endings[b] is None for b in live])
        if not on.any() or on.sum() <= len(live) // 2:  # ended rows stay unchanged under pgx: keep them
            for row in np.flatnonzero(~on):
                final_states[live[row]] = cb.state_at(states, int(row))
            states, live, actions = jax.tree.map(lambda x: x[on], states), live[on], actions[on]
        if not on.any():
            break
        states = step(states, jnp.asarray(actions))
    return dict(boards=boards, endings=endings, seen=seen, mismatches=mismatches, final_states=final_states,
                fide_first_threefold=fide_first_threefold)


def test_legal_moves_and_endings_agree_with_python_chess(played):
    assert played["mismatches"] == []
    assert all(e is not None for e in played["endings"])


def test_every_ending_and_special_move_occurred(played):
    seen = played["seen"]
    for ending in ("checkmate", "stalemate", "insufficient", "fifty", "threefold", "cap"):
        assert seen[ending] >= 1, (ending, seen)
    for kind in ("castling", "en passant", "underpromotion"):
        assert seen[f"legal {kind}"] >= 20 and seen[f"played {kind}"] >= 1, (kind, seen)
    assert seen["played promotion"] >= 1


def test_scripted_repetitions(played):
    # The start position counts (games.Game.init fixes pgx's stale start hash for this).
    assert played["endings"][0] == ("threefold", 8) and played["fide_first_threefold"][0] == 8
    # The documented difference: FIDE's third occurrence at ply 9, pgx's at ply 10.
    assert played["endings"][1] == ("threefold", 10) and played["fide_first_threefold"][1] == 9


def test_pgx_repetition_is_never_earlier_than_fide(played):
    for board, (ending, ply), fide in zip(played["boards"], played["endings"], played["fide_first_threefold"]):
        if ending == "threefold":
            assert board.is_repetition(3)  # FIDE agrees the position occurred three times
            assert fide is not None and fide <= ply


def test_final_states_replay_through_the_bridge(played):
    # Terminal pgx states: the bridge's FEN equals python-chess's, and a replay of the moves
    # (board_to_state) rebuilds the same position and repetition history.
    for b in range(0, N_GAMES, 37):
        board = played["boards"][b]
        state = played["final_states"][b]
        assert cb.state_to_fen(state) == board.fen()
        replayed = cb.board_to_state(board)
        replayed_x, x = pgx_internals.rule_state(replayed), pgx_internals.rule_state(state)
        np.testing.assert_array_equal(np.asarray(replayed_x.board), np.asarray(x.board))
        np.testing.assert_array_equal(np.asarray(replayed_x.hash_history), np.asarray(x.hash_history))
        assert bool(replayed.terminated)
