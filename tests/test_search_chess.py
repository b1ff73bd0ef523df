"""search/ on chess: mate-in-1 puzzles with a uniform network, legality over 1,000 random
positions (python-chess cross-check), legal slots at every depth, noise on legal moves only, and
terminal leaves (checkmate, stalemate) valued by the rules."""
import csv
import dataclasses
import random

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pgx.experimental.chess import to_fen

import games
import search
from games import pgx_internals
from games.pgx_internals import GameState
from runtime.data import data_file
from search import SearchConfig, slots

CHESS = games.make("chess")
PIECES = {chess.PAWN: 1, chess.KNIGHT: 2, chess.BISHOP: 3, chess.ROOK: 4, chess.QUEEN: 5, chess.KING: 6}


def uniform_network(value=0.0):
    return lambda params, obs: (jnp.zeros((obs.shape[0], CHESS.num_actions)),
                                jnp.full((obs.shape[0],), value))


# pgx.experimental.chess.from_fen re-jits per call (seconds each); this builds many at once.
_DEFAULT = jax.device_get(pgx_internals.empty_game_state())
HASH_HISTORY, BOARD_HISTORY, LEGAL_MASK = (_DEFAULT.hash_history, _DEFAULT.board_history,
                                           _DEFAULT.legal_action_mask)


def _game_state(board: chess.Board) -> GameState:
    grid = np.zeros((8, 8), np.int32)  # row 0 = rank 8, column = file, white pieces positive
    for square, piece in board.piece_map().items():
        sign = 1 if piece.color == chess.WHITE else -1
        grid[7 - chess.square_rank(square), chess.square_file(square)] = sign * PIECES[piece.piece_type]
    black = board.turn == chess.BLACK
    if black:
        grid = -np.flip(grid, axis=0)  # pgx: always from the side to move, its pieces positive
    rights = [[board.has_queenside_castling_rights(c), board.has_kingside_castling_rights(c)]
              for c in (chess.WHITE, chess.BLACK)]
    ep = -1
    if board.ep_square is not None:  # pgx keeps the square after any double push
        file, rank = chess.square_file(board.ep_square), chess.square_rank(board.ep_square)
        ep = file * 8 + (7 - rank if black else rank)  # pgx flips the rank for black
    return pgx_internals.game_state(color=np.int32(black), board=np.rot90(grid, k=3).flatten().astype(np.int32),
                                    castling_rights=np.array(rights[::-1] if black else rights, bool),
                                    en_passant=np.int32(ep), halfmove_count=np.int32(board.halfmove_clock),
                                    fullmove_count=np.int32(board.fullmove_number),
                                    hash_history=HASH_HISTORY, board_history=BOARD_HISTORY,
                                    legal_action_mask=LEGAL_MASK, step_count=np.int32(0))


@jax.jit
@jax.vmap
def _finish(x: GameState):
    x = x._replace(legal_action_mask=pgx_internals.legal_action_mask(x))
    x = pgx_internals.update_history(x)
    state = pgx_internals.chess_state(x, jnp.int32([0, 1]))
    return state.replace(legal_action_mask=x.legal_action_mask)  # the rules' own mask, in ended positions too


def boards_to_states(boards):
    """python-chess boards -> batched pgx states (no history before the position)."""
    return _finish(jax.tree.map(lambda *xs: np.stack(xs), *[_game_state(b) for b in boards]))


STEP = jax.jit(CHESS.step)


def _position(board: chess.Board) -> list[str]:
    return board.fen().split()[:2]  # placement and side to move


def moves_of_actions(boards, states, actions) -> list[chess.Move]:
    """For each row: the python-chess legal move of boards[b] whose result is the position pgx
    reaches with actions[b] from states[b] (AssertionError if none is)."""
    after = jax.device_get(STEP(states, jnp.asarray(actions, jnp.int32)))
    out = []
    for b, board in enumerate(boards):
        target = to_fen(jax.tree.map(lambda x: x[b], after)).split()[:2]
        found = []
        for move in board.legal_moves:
            board.push(move)
            if _position(board) == target:
                found.append(move)
            board.pop()
        assert len(found) == 1, f"action {actions[b]} reaches no legal successor of {board.fen()}"
        out.append(found[0])
    return out


def take(states, rows):
    return jax.tree.map(lambda x: x[jnp.asarray(rows)], states)


def mate_in_one_puzzles(count):
    """(board after the opponent's setup move, puzzle id) for the first `count` mateIn1 puzzles."""
    out = []
    with open(data_file("puzzles", "lichess_puzzles_themed.csv")) as f:
        for row in csv.DictReader(f):
            if "mateIn1" in row["Themes"].split():
                board = chess.Board(row["FEN"])
                board.push_uci(row["Moves"].split()[0])  # Lichess: the FEN is before this move
                out.append((board, row["PuzzleId"]))
                if len(out) == count:
                    break
    return out


PUZZLE_COUNT = 128  # a fixed sample of the 1,235 mateIn1 puzzles (2 batches of 64)


@pytest.mark.slow
def test_uniform_network_finds_mate_in_one():
    run = search.make_search(CHESS, uniform_network(), SearchConfig(
        num_simulations=200, root_noise=False, temperature_plies=0))
    puzzles = mate_in_one_puzzles(PUZZLE_COUNT)
    assert len(puzzles) == PUZZLE_COUNT
    missed = []
    for start in range(0, PUZZLE_COUNT, 64):
        batch = puzzles[start:start + 64]
        boards = [board for board, _ in batch]
        states = boards_to_states(boards)
        out = run(None, states, jax.random.PRNGKey(start))
        moves = moves_of_actions(boards, states, out.action)
        for b, (board, puzzle_id) in enumerate(batch):
            board.push(moves[b])
            if not board.is_checkmate():
                missed.append(puzzle_id)
                continue
            # The mate's Q is the rules' +1 exactly (the network's value is 0 everywhere).
            slot = int(np.flatnonzero(np.asarray(out.slot_actions[b]) == int(out.action[b]))[0])
            assert float(out.child_q[b, slot]) == 1.0
    assert len(missed) <= 0.05 * PUZZLE_COUNT, f"no mate found in {missed}"


def random_boards(count, seed):
    rng, out = random.Random(seed), []
    while len(out) < count:
        board = chess.Board()
        for _ in range(rng.randrange(0, 80)):
            moves = list(board.legal_moves)
            board.push(rng.choice(moves))
            if board.is_game_over(claim_draw=False) or board.halfmove_clock >= 90:
                board.pop()
                break
        out.append(chess.Board(board.fen()))  # drop the move stack (pgx has no history either)
    return out


@pytest.mark.slow
def test_never_an_illegal_move_and_no_empty_slot_at_any_depth():
    boards = random_boards(1000, seed=3)
    states = boards_to_states(boards)
    config = SearchConfig(num_simulations=8)  # noise on, temperature sampling: self-play settings
    out, tree = search.make_search(CHESS, uniform_network(0.1), config, return_tree=True)(
        None, states, jax.random.PRNGKey(0))
    actions = np.asarray(out.action)
    legal = np.asarray(states.legal_action_mask)
    assert legal[np.arange(len(boards)), actions].all(), "an illegal move was returned"
    # The slot table is exactly python-chess's legal moves, in count.
    filled = (np.asarray(out.slot_actions) != slots.EMPTY).sum(axis=1)
    np.testing.assert_array_equal(filled, [b.legal_moves.count() for b in boards])
    sample = list(range(0, 1000, 20))  # the returned action is a python-chess legal move
    moves_of_actions([boards[b] for b in sample], take(states, sample), actions[sample])

    # Every visited edge of every node leaves by a legal move of that node's own position.
    node_slots = np.asarray(tree.embeddings.slot_actions)  # [B, nodes, W]
    node_masks = np.asarray(tree.embeddings.state.legal_action_mask)  # [B, nodes, A]
    node_over = np.asarray(tree.embeddings.state.terminated | tree.embeddings.state.truncated)
    b, n, s = np.nonzero(np.asarray(tree.children_visits) > 0)
    live = ~node_over[b, n]
    assert live.sum() > 1000 * config.num_simulations // 2
    edge_actions = node_slots[b[live], n[live], s[live]]
    assert (edge_actions != slots.EMPTY).all(), "an empty slot was visited"
    assert node_masks[b[live], n[live], edge_actions].all(), "an illegal move was searched"
    assert np.asarray(tree.node_visits)[:, 0].min() == config.num_simulations + 1

    # Root noise (on here) changed the prior of legal slots only.
    clean, noisy = np.asarray(out.prior_logits), np.asarray(tree.children_prior_logits[:, 0])
    empty = np.asarray(out.slot_actions) == slots.EMPTY
    np.testing.assert_array_equal(noisy[empty], slots.EMPTY_LOGIT)
    assert (noisy[~empty] > -1e30).all()
    moved = np.abs(jax.nn.softmax(noisy) - jax.nn.softmax(clean)) > 1e-6
    assert moved[~empty].mean() > 0.5 and not moved[empty].any()


def test_checkmate_and_stalemate_leaves_get_the_game_value():
    """Every move of two positions through the recurrent fn: a mating move's edge is worth +1 to
    the mover, a stalemating one 0, both with value 0 and discount 0; other moves are valued by
    the network (+0.5 for the side to move here) with discount -1. python-chess says which is which."""
    fens = ["k7/3Q4/1K6/8/8/8/8/8 w - - 0 1",  # Qc7 stalemates; Qa7, Qb7, Qc8, Qd8, Qe8 mate
            "8/8/8/8/8/1k6/3q4/K7 b - - 0 1"]  # the same, colours reversed
    boards = [chess.Board(fen) for fen in fens]
    roots = boards_to_states(boards)
    root_slots = np.asarray(search.legal_slots(CHESS, roots))
    rows, slot = np.nonzero(root_slots != slots.EMPTY)
    states = take(roots, rows)
    node = search.Node(search.game_search._slim(states), jnp.asarray(root_slots[rows]))
    recurrent = jax.jit(search.make_recurrent_fn(CHESS, uniform_network(0.5)))
    out, child = recurrent(None, jax.random.PRNGKey(0), jnp.asarray(slot), node)
    moves = moves_of_actions([boards[r] for r in rows], states, root_slots[rows, slot])
    kinds = []
    for k, (r, move) in enumerate(zip(rows, moves)):
        board = boards[r].copy()
        board.push(move)
        kind = "mate" if board.is_checkmate() else "stalemate" if board.is_stalemate() else "play"
        kinds.append(kind)
        expected = {"mate": (1.0, 0.0, 0.0), "stalemate": (0.0, 0.0, 0.0), "play": (0.0, -1.0, 0.5)}
        got = (float(out.reward[k]), float(out.discount[k]), float(out.value[k]))
        assert got == expected[kind], f"{fens[r]} {move.uci()} ({kind}): {got}"
        if kind != "play":  # nothing to search below a finished game
            assert (np.asarray(child.slot_actions[k]) == slots.EMPTY).all()
            assert (np.asarray(out.prior_logits[k]) == slots.EMPTY_LOGIT).all()
    assert kinds.count("mate") == 10 and kinds.count("stalemate") == 4  # python-chess's count


FREE_QUEEN = "rnb1kbnr/pppp1ppp/8/4p3/4P2q/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"  # Nxh4 wins the queen


def _prior_takes_the_queen_value_flat():
    """A network whose prior puts most of its mass on Nxh4 and whose value is flat: +-0.01, and a hair
    wrong (a side without its queen reads 0.01 better), as an untrained or barely trained value head is."""
    from games import chess_bridge
    take = chess_bridge.uci_to_pgx_action("f3h4", True)

    def evaluate(params, obs):
        logits = jnp.zeros((obs.shape[0], CHESS.num_actions)).at[:, take].set(2.0)
        queens = jnp.sum(obs[:, :, :, 4], axis=(1, 2))  # pgx plane 4: the side to move's queens
        return logits, 0.01 * (1.0 - queens)
    return evaluate


@pytest.mark.parametrize("where", ["SearchConfig()", "configs/chess_cpu.yaml"])  # PUCT (chess_az's too), Gumbel
def test_a_flat_value_does_not_talk_the_search_out_of_a_free_queen(where):
    """The search plays what its prior knows while the value says nothing: min-max rescaling of Q over
    the siblings (the former default) turns a 0.01 spread into a full-scale one and played a2a3 here."""
    from configs.loader import load
    from games import chess_bridge
    from selfplay.config import SelfPlayConfig
    cfg = SearchConfig() if where == "SearchConfig()" else load(SelfPlayConfig, where, []).search
    cfg = dataclasses.replace(cfg.for_play(), num_simulations=64)
    fn = search.make_search(CHESS, _prior_takes_the_queen_value_flat(), cfg)
    state = jax.tree.map(lambda x: x[None], chess_bridge.fen_to_state(FREE_QUEEN))
    action = int(fn(None, state, jax.random.PRNGKey(0)).action[0])
    assert chess_bridge.pgx_action_to_uci(action, True) == "f3h4"
