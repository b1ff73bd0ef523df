"""The batched Game interface (games.make) on every game: shapes, turns, terminal rewards."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games

B = 4


def _init(game, seed=0):
    return jax.jit(game.init)(jax.random.split(jax.random.PRNGKey(seed), B))


@pytest.mark.parametrize("name", sorted(games.SPECS))
def test_interface_shapes_and_one_step(name):
    game = games.make(name)
    spec = game.spec
    states = _init(game)
    assert game.observe(states).shape == (B, *spec.observation_shape)
    mask = np.asarray(game.legal_mask(states))
    assert mask.shape == (B, spec.num_actions) and mask.dtype == bool
    assert 0 < mask.sum(axis=1).min() and mask.sum(axis=1).max() <= spec.max_legal_actions
    player = np.asarray(game.current_player(states))
    assert set(player.tolist()) <= {0, 1}
    assert not np.asarray(game.terminal(states)).any()
    assert np.asarray(game.plies(states)).tolist() == [0] * B

    actions = jnp.argmax(game.legal_mask(states), axis=-1)  # the first legal action
    after = jax.jit(game.step)(states, actions)
    assert np.asarray(game.plies(after)).tolist() == [1] * B
    assert (np.asarray(game.current_player(after)) == 1 - player).all()  # turns alternate
    assert game.rewards(after).shape == (B, 2)
    # The position after the same first action is the same whoever plays it.
    obs = np.asarray(game.observe(after))
    assert (obs == obs[0]).all()
    # every Game of one name shares one jitted init and step: a search traces the rules once per shape
    assert games.make(name)._step is game._step and games.make(name)._init is game._init
    np.testing.assert_array_equal(np.asarray(game.observe(game.step(states, actions))), obs)  # eager too


def test_unknown_game_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown game 'chezz'"):
        games.make("chezz")


def _play(game, moves_per_game):
    """Plays the given action lists (one per game, same length) and returns every state."""
    states = _init(game, seed=1)
    step = jax.jit(game.step)
    history = [states]
    for actions in np.asarray(moves_per_game).T:
        states = step(states, jnp.asarray(actions))
        history.append(states)
    return history


def test_tic_tac_toe_win_and_draw_rewards():
    game = games.make("tic_tac_toe")
    # Cells 0..8 row-major. Game 0: first player takes the top row (0, 1, 2) -> wins on ply 5.
    # Game 1: a drawn game filling the board.
    win = [0, 3, 1, 4, 2, 5, 6, 7, 8]  # moves after the end are ignored by pgx
    draw = [0, 4, 8, 1, 7, 6, 2, 5, 3]
    history = _play(game, [win, draw, win, draw])
    first_player = np.asarray(game.current_player(history[0]))
    after_win = history[5]
    terminal = np.asarray(game.terminal(after_win))
    assert terminal.tolist() == [True, False, True, False]
    rewards = np.asarray(game.rewards(after_win))
    for b in (0, 2):
        assert rewards[b, first_player[b]] == 1 and rewards[b, 1 - first_player[b]] == -1
    # The mover won, so the side to move after the win has lost.
    assert np.asarray(game.reward_to_move(after_win))[[0, 2]].tolist() == [-1, -1]
    final = history[-1]
    assert np.asarray(game.terminal(final)).all()
    assert (np.asarray(game.rewards(history[9]))[[1, 3]] == 0).all()  # the draw
    assert (np.asarray(game.rewards(final))[[0, 2]] == 0).all()  # no reward after the end


def test_connect_four_vertical_win():
    game = games.make("connect_four")
    # Columns: first player stacks column 0 four times, second plays column 1.
    moves = [0, 1, 0, 1, 0, 1, 0]
    history = _play(game, [moves] * B)
    first_player = np.asarray(game.current_player(history[0]))
    assert not np.asarray(game.terminal(history[6])).any()
    final = history[7]
    assert np.asarray(game.terminal(final)).all()
    rewards = np.asarray(game.rewards(final))
    assert (rewards[np.arange(B), first_player] == 1).all()
    assert (rewards.sum(axis=1) == 0).all()


def test_chess_ply_cap_is_the_spec():
    game = games.make("chess")
    assert game.spec.max_plies == 512 and game.spec.num_actions == 4672
    assert game.spec.max_legal_actions == 218
