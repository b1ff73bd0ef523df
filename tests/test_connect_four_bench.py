"""bench/connect_four_strength.py's games: counts, traces, and each traced game replayed by pgx."""
import dataclasses
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import connect_four_strength as bench  # noqa: E402

import games  # noqa: E402
import models  # noqa: E402
import search  # noqa: E402
from arena.batched.board_players import alphabeta_move  # noqa: E402
from models.resnet import ResNetConfig  # noqa: E402
from search import SearchConfig  # noqa: E402


def test_traced_games_replay_to_their_results():
    game = games.make("connect_four")
    net = models.make_network(models.NetworkConfig(resnet=ResNetConfig(num_blocks=1, filters=8, value_hidden=16)),
                              game.spec)
    variables = net.init(jax.random.PRNGKey(0), jnp.zeros((1, *game.spec.observation_shape)), train=False)
    cfg = SearchConfig(policy="puct", num_simulations=8, root_noise=False, temperature_plies=0, win_check="tree")
    agent = search.make_search(game, lambda v, o: net.apply(v, o, train=False), cfg)
    opponent = lambda board, rng: alphabeta_move(board, 2, rng)
    step, terminal, legal_mask = jax.jit(game.step), jax.jit(game.terminal), jax.jit(game.legal_mask)  # not op by op
    for first in (True, False):
        traces = []
        counts = bench.play(agent, variables, game, opponent, 3, first, seed=int(first), random_plies=2,
                            traces=traces)
        assert [t.game for t in traces] == [0, 1, 2] and all(t.agent_first == first for t in traces)
        results = [t.result for t in traces]
        assert counts == {"wins": results.count(1), "draws": results.count(0), "losses": results.count(-1)}
        for t in traces:
            state = game.init(jax.random.split(jax.random.PRNGKey(0), 1))
            for column in t.moves:
                assert not bool(terminal(state)[0]) and bool(legal_mask(state)[0, column])
                state = step(state, jnp.array([column], jnp.int32))
            assert bool(terminal(state)[0])  # the game ended on its last recorded move
            last_mover_won = float(np.asarray(state.rewards).max()) > 0
            agent_moved_last = (len(t.moves) % 2 == 1) == first
            expected = 0 if not last_mover_won else (1 if agent_moved_last else -1)
            assert t.result == expected, (t.moves, t.result)
            # the agent searched every one of its moves after the random opening, and only those
            plies = [p for p, _, _ in t.agent_moves]
            assert plies == [p for p in range(2, len(t.moves)) if (p % 2 == 0) == first]
            assert all(-1.0 <= v <= 1.0 for _, v, _ in t.agent_moves)


def test_repeated_games_count_once_in_the_standard_error():
    win, loss = bench.GameTrace(True, 0, 1, [3, 3, 4], []), bench.GameTrace(True, 1, -1, [3, 2, 4], [])
    # three distinct games: the plain error of a mean of 2/3, sqrt(p (1 - p) / 3)
    other_colour = bench.GameTrace(False, 2, 1, [3, 3, 4], [])
    distinct, se = bench.score_stderr([win, loss, other_colour])
    assert distinct == 3 and np.isclose(se, np.sqrt(2 / 9 / 3))
    # the win played twice move for move: one cluster of two, deviations 2 * 1/3 and -2/3
    distinct, se = bench.score_stderr([win, dataclasses.replace(win, game=2), loss])
    assert distinct == 2 and np.isclose(se, np.sqrt((2 / 3) ** 2 + (2 / 3) ** 2) / 3)
    assert se > np.sqrt(2 / 9 / 3)  # wider than the plain error that counts the repeat twice
    assert bench.score_stderr([]) == (0, 0.0)
