"""Board symmetries against pgx itself: the transformed game, replayed move by move with renamed
actions, has the transformed observation and the renamed legal moves at every ply."""
import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pytest

from games import symmetry


def _replay(env, actions):
    state = env.init(jax.random.PRNGKey(0))
    step = jax.jit(env.step)
    states = [state]
    for a in actions:
        state = step(state, jnp.int32(a))
        states.append(state)
    return states


def _random_game(env, plies, seed):
    rng = np.random.default_rng(seed)
    state, actions = env.init(jax.random.PRNGKey(0)), []
    step = jax.jit(env.step)
    for _ in range(plies):
        if bool(state.terminated):
            break
        a = int(rng.choice(np.flatnonzero(np.asarray(state.legal_action_mask))))
        actions.append(a)
        state = step(state, jnp.int32(a))
    return actions


@pytest.mark.parametrize("game,count,plies", [("connect_four", 2, 12), ("tic_tac_toe", 8, 6), ("go_9x9", 8, 14)])
def test_each_transform_is_a_symmetry_of_the_rules(game, count, plies):
    env = pgx.make(game)
    transforms = symmetry.of(game)
    assert len(transforms) == count and transforms[0].name in ("identity", "rot0")
    actions = _random_game(env, plies, seed=len(game))
    original = _replay(env, actions)
    for t in transforms:
        assert sorted(t.action_map) == list(range(env.num_actions))  # a renaming: one to one
        mirrored = _replay(env, [int(t.action_map[a]) for a in actions])
        for s, m in zip(original, mirrored):
            np.testing.assert_array_equal(np.asarray(t.grid(np.asarray(s.observation), np)),
                                          np.asarray(m.observation), err_msg=t.name)
            legal = np.flatnonzero(np.asarray(s.legal_action_mask))
            assert sorted(t.action_map[legal]) == list(np.flatnonzero(np.asarray(m.legal_action_mask))), t.name


def test_chess_has_no_symmetry_and_augment_leaves_it_alone():
    (only,) = symmetry.of("chess")
    obs, legal = jnp.ones((2, 8, 8, 119)), jnp.array([[5, -1], [7, 9]])
    out_obs, out_legal = symmetry.augment((only,), jax.random.PRNGKey(0), obs, legal)
    assert out_obs is obs and out_legal is legal


def test_augment_draws_a_transform_per_position_and_keeps_pads():
    transforms = symmetry.of("connect_four")
    obs = jnp.asarray(np.arange(64 * 6 * 7 * 2, dtype=np.float32).reshape(64, 6, 7, 2))
    legal = jnp.tile(jnp.array([0, 1, 6, -1]), (64, 1))
    out_obs, out_legal = jax.jit(lambda k, o, la: symmetry.augment(transforms, k, o, la))(
        jax.random.PRNGKey(3), obs, legal)
    mirrored = np.all(np.asarray(out_obs) == np.asarray(obs)[:, :, ::-1], axis=(1, 2, 3))
    kept = np.all(np.asarray(out_obs) == np.asarray(obs), axis=(1, 2, 3))
    assert np.all(mirrored ^ kept) and 10 < mirrored.sum() < 54  # each position one of the two, both drawn
    np.testing.assert_array_equal(np.asarray(out_legal)[mirrored], np.tile([6, 5, 0, -1], (mirrored.sum(), 1)))
    np.testing.assert_array_equal(np.asarray(out_legal)[kept], np.tile([0, 1, 6, -1], (kept.sum(), 1)))


def test_augment_renames_further_action_arrays_by_each_positions_own_transform():
    transforms = symmetry.of("connect_four")
    obs = jnp.asarray(np.arange(64 * 6 * 7 * 2, dtype=np.float32).reshape(64, 6, 7, 2))
    legal = jnp.tile(jnp.array([0, 1, 6, -1]), (64, 1))
    replies = jnp.tile(jnp.array([2, -1, -1, -1]), (64, 1))  # the next position's moves
    out_obs, out_legal, out_replies = symmetry.augment(transforms, jax.random.PRNGKey(3), obs, legal, replies)
    same_obs, same_legal = symmetry.augment(transforms, jax.random.PRNGKey(3), obs, legal)
    np.testing.assert_array_equal(out_obs, same_obs)  # the extra array does not change the draw
    np.testing.assert_array_equal(out_legal, same_legal)
    mirrored = np.asarray(out_legal)[:, 0] == 6
    assert 10 < mirrored.sum() < 54
    np.testing.assert_array_equal(np.asarray(out_replies)[:, 0], np.where(mirrored, 4, 2))
    assert np.all(np.asarray(out_replies)[:, 1:] == -1)
