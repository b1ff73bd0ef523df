"""Forced results in the search: immediate wins and forcing lines against python-chess, certain
values against tic-tac-toe minimax, and mates found by an untrained network at 64 simulations."""
import csv
import functools

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_search import random_ttt_positions, winner_after, zero_network

import games
import models
import search
from games import chess_bridge
from games.immediate_wins import immediate_wins, legal_slots, wins_in_two
from runtime.data import data_file
from search import SearchConfig

CHESS = games.make("chess")
TTT = games.make("tic_tac_toe")


def puzzles(theme: str | None, count: int) -> list[tuple[chess.Board, list[str]]]:
    """(board with the solver to move, the solution line) for the file's first `count` puzzles."""
    out = []
    with open(data_file("puzzles", "lichess_puzzles_themed.csv")) as f:
        for row in csv.DictReader(f):
            if theme is None or theme in row["Themes"].split():
                board, moves = chess.Board(row["FEN"]), row["Moves"].split()
                board.push_uci(moves[0])  # Lichess: the FEN is before the opponent's setup move
                out.append((board, moves[1:]))
                if len(out) == count:
                    return out
    return out


def stack(boards):
    return jax.tree.map(lambda *x: jnp.stack(x), *[chess_bridge.board_to_state(b) for b in boards])


def mating_moves(board: chess.Board) -> set[str]:
    out = set()
    for move in board.legal_moves:
        board.push(move)
        if board.is_checkmate():
            out.add(move.uci())
        board.pop()
    return out


def flagged(boards, states, slot_actions, mask) -> list[set[str]]:
    slot_actions, mask = np.asarray(slot_actions), np.asarray(mask)
    return [{chess_bridge.pgx_action_to_move(int(a), board).uci()
             for a, ok in zip(slot_actions[b], mask[b]) if ok} for b, board in enumerate(boards)]


def test_immediate_wins_are_exactly_python_chess_mates():
    boards = [b for b, _ in puzzles(None, 160)]
    states = stack(boards)
    slot_actions = legal_slots(CHESS, states, CHESS.max_legal_actions)
    wins = jax.jit(lambda s, a: immediate_wins(CHESS, s, a))(states, slot_actions)
    found = flagged(boards, states, slot_actions, wins)
    expected = [mating_moves(b) for b in boards]
    assert sum(bool(e) for e in expected) >= 20  # the sample holds mates to find
    assert found == expected


def forced_mate_in_two(board: chess.Board, uci: str) -> bool:
    """python-chess: after `uci` the opponent is not mated, and every reply allows a mate in 1."""
    board = board.copy()
    board.push_uci(uci)
    if board.is_game_over():
        return False
    for reply in list(board.legal_moves):
        board.push(reply)
        punished = bool(mating_moves(board))
        board.pop()
        if not punished:
            return False
    return True


def in_probe_scope(after: chess.Board, max_replies=4, max_checks=16) -> bool:
    """The key checks, leaves <= max_replies replies, and each reply leaves <= max_checks checks."""
    if not after.is_check() or after.legal_moves.count() > max_replies:
        return False
    for reply in list(after.legal_moves):
        after.push(reply)
        checks = sum(after.gives_check(m) for m in after.legal_moves)
        after.pop()
        if checks > max_checks:
            return False
    return True


def test_wins_in_two_are_forced_mates_and_find_checking_keys():
    lines = puzzles("mateIn2", 40)
    boards = [b for b, _ in lines]
    states = stack(boards)
    slot_actions = legal_slots(CHESS, states, CHESS.max_legal_actions)
    wins = jax.jit(lambda s, a: wins_in_two(CHESS, s, a, max_checks=16))(states, slot_actions)
    found = flagged(boards, states, slot_actions, wins)
    in_scope = 0
    for board, (key, *_), moves in zip(boards, (line for _, line in lines), found):
        for uci in moves:
            assert forced_mate_in_two(board, uci), f"{board.fen()}: {uci} is not a forced mate in 2"
        after = board.copy()
        after.push_uci(key)
        if in_probe_scope(after):
            in_scope += 1
            assert key in moves, f"{board.fen()}: the checking key {key} was not found"
    assert in_scope >= 10


def untrained_chess_network():
    cfg = models.NetworkConfig(family="resnet", resnet=models.ResNetConfig(num_blocks=2, filters=32,
                                                                           value_hidden=64))
    net = models.make_network(cfg, CHESS.spec)
    obs = CHESS.observe(CHESS.init(jax.random.split(jax.random.PRNGKey(0), 1)))
    variables = net.init(jax.random.PRNGKey(0), obs, train=False)
    return (lambda v, o: net.apply(v, o, train=False)), variables


@pytest.mark.slow
@pytest.mark.parametrize("win_check", ["root", "tree"])
@pytest.mark.parametrize("policy", ["puct", "gumbel"])
def test_untrained_network_plays_the_mate_in_one_at_64_simulations(policy, win_check):
    evaluate, variables = untrained_chess_network()
    run = search.make_search(CHESS, evaluate, SearchConfig(
        policy=policy, num_simulations=64, root_noise=False, temperature_plies=0, gumbel_scale=0.0,
        win_check=win_check))
    boards = [b for b, _ in puzzles("mateIn1", 16)]
    out = run(variables, stack(boards), jax.random.PRNGKey(0))
    mated = 0
    for b, board in enumerate(boards):
        board.push(chess_bridge.pgx_action_to_move(int(out.action[b]), board))
        mated += board.is_checkmate()
        assert bool(out.root_certain[b]) and float(out.root_value[b]) == 1.0
    assert mated >= 0.95 * len(boards)


@functools.lru_cache(maxsize=None)
def minimax(board: tuple, mark: int) -> int:
    """Tic-tac-toe value for `mark` to move under perfect play: +1 win, 0 draw, -1 loss."""
    empty = [c for c in range(9) if board[c] is None]
    if not empty:
        return 0
    best = -1
    for cell in empty:
        after, won = winner_after(board, cell, mark)
        best = max(best, 1 if won else -minimax(after, 1 - mark))
    return best


def ttt_states(positions):
    states = TTT.init(jax.random.split(jax.random.PRNGKey(0), len(positions)))
    for ply in range(max(len(p) for p in positions)):
        actions = jnp.array([p[ply] if ply < len(p) else 0 for p in positions])
        stepped = TTT.step(states, actions)
        live = jnp.array([ply < len(p) for p in positions])
        states = jax.tree.map(lambda a, b: jnp.where(
            live.reshape((-1,) + (1,) * (a.ndim - 1)), b, a), states, stepped)
    return states


def test_certain_values_are_minimax_values_and_proven_losses_are_avoided():
    positions = random_ttt_positions(40, seed=3)
    states = ttt_states(positions)
    run = search.make_search(TTT, zero_network(TTT), SearchConfig(
        num_simulations=300, root_noise=False, temperature_plies=0, win_check="tree"))
    out = run(None, states, jax.random.PRNGKey(0))
    certain = 0
    for b, moves in enumerate(positions):
        board, mark = (None,) * 9, 0
        for cell in moves:
            board, _ = winner_after(board, cell, mark)
            mark = 1 - mark
        value = minimax(board, mark)
        cell = int(out.action[b])
        after, won = winner_after(board, cell, mark)
        played = 1 if won else -minimax(after, 1 - mark)
        if bool(out.root_certain[b]):
            certain += 1
            assert float(out.root_value[b]) == value, f"{moves}: certain value is not minimax's"
            assert played == value, f"{moves}: a proven result was not played"
        if any(winner_after(board, c, mark)[1] for c in range(9) if board[c] is None):
            assert bool(out.root_certain[b]) and played == 1, f"{moves}: a win in one was missed"
    assert certain >= 20  # most small trees get solved: the check above is not vacuous
