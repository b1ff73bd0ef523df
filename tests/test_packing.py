"""Compact observations (games/packing.py): exact against pgx's own observations of every game, on
the host and on the device, through a game record and through the replay window."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games
from games import packing
from replay.record import GameRecord, decode, encode


def random_positions(name: str, batch: int = 8, plies: int = 40, seed: int = 0) -> np.ndarray:
    """pgx observations [plies * batch, *obs_shape] along random games (new games where one ends)."""
    game = games.make(name)
    init, step = jax.jit(game.init), jax.jit(game.step)
    states = init(jax.random.split(jax.random.PRNGKey(seed), batch))
    key, out = jax.random.PRNGKey(seed + 1), []
    for i in range(plies):
        out.append(np.asarray(game.observe(states)))
        key, k, k2 = jax.random.split(key, 3)
        action = jax.random.categorical(k, jnp.where(game.legal_mask(states), 0.0, -jnp.inf))
        states = step(states, action)
        over = np.asarray(game.terminal(states))
        if over.any():
            fresh = init(jax.random.split(k2, batch))
            states = jax.tree.map(lambda a, b: jnp.where(over.reshape((-1,) + (1,) * (a.ndim - 1)), a, b),
                                  fresh, states)
    return np.concatenate(out)


@pytest.mark.parametrize("name", ["chess", "connect_four", "tic_tac_toe", "go_9x9", "shogi"])
def test_every_games_observations_pack_exactly_on_host_and_device(name):
    obs = random_positions(name, plies={"shogi": 6, "chess": 24, "go_9x9": 24}.get(name, 40))
    packed = packing.pack(obs)
    assert packing.exact(obs).all()
    np.testing.assert_array_equal(packing.unpack(packed, obs.shape[1:], obs.dtype), obs)
    on_device = jax.jit(packing.pack)(jnp.asarray(obs))  # what the actor computes
    np.testing.assert_array_equal(np.asarray(on_device.bits), packed.bits)
    np.testing.assert_array_equal(np.asarray(on_device.values), packed.values)
    back = jax.jit(lambda p: packing.unpack(p, obs.shape[1:], obs.dtype))(on_device)  # what the learner computes
    np.testing.assert_array_equal(np.asarray(back), obs)
    rows = packing.to_bytes(packed)
    assert len(rows) == len(obs) and all(len(r) == packing.record_bytes(obs.shape[1:]) for r in rows)
    again = packing.from_bytes(rows, obs.shape[1:])
    np.testing.assert_array_equal(packing.unpack(again, obs.shape[1:], obs.dtype), obs)


def test_a_chess_position_takes_1428_bytes_instead_of_30464():
    obs = random_positions("chess", batch=2, plies=30)
    assert obs[0].nbytes == 30464 and packing.record_bytes(obs.shape[1:]) == 1428
    # the constant planes keep their non-binary values: move count / 512, no-progress count / 100
    values = packing.pack(obs).values
    assert (values[-1, 113] > 0 and values[-1, 113] != 1.0) and set(np.unique(values[:, :112])) <= {0.0, 1.0}


def test_a_plane_with_two_different_values_is_not_exact():
    obs = np.zeros((2, 3, 3, 2), np.float32)
    obs[0, 0, 0, 1], obs[0, 2, 2, 1] = 0.5, 0.25  # two values on one plane: not packable
    obs[1, 1, 1, 0] = -3.0  # one (negative) value per plane: packable
    np.testing.assert_array_equal(packing.exact(obs), [False, True])
    np.testing.assert_array_equal(np.asarray(jax.jit(packing.exact)(jnp.asarray(obs))), [False, True])


def test_from_bytes_refuses_a_torn_row():
    rows = packing.to_bytes(packing.pack(np.ones((2, 3, 3, 2), bool)))
    with pytest.raises(ValueError, match="not whole positions"):
        packing.from_bytes(b"".join(rows)[:-1], (3, 3, 2))


def test_a_packed_record_round_trips_and_reads_back_every_observation():
    obs = random_positions("chess", batch=1, plies=9, seed=3)
    T = len(obs)
    record = GameRecord(
        game="chess", game_id="x", init_key=np.array([1, 2], np.uint32), actions=np.zeros(T, np.int32),
        observations=packing.to_bytes(packing.pack(obs)), obs_shape=obs.shape[1:], obs_dtype="float32",
        to_play=np.zeros(T, np.int8), num_legal=np.ones(T, np.int16), legal_actions=np.zeros(T, np.int32),
        policy=np.ones(T, np.float32), child_q=np.zeros(T, np.float32), root_value=np.zeros(T, np.float32),
        rewards=np.zeros(2, np.float32), termination="rules", resign_disabled=False, resign_would_have=-1,
        param_versions=np.zeros(2, np.int64), created=0.0, obs_encoding="packed")
    back = decode(encode(record))
    assert back.obs_encoding == "packed"
    for t in range(T):
        np.testing.assert_array_equal(back.observation(t), obs[t])
    packed = back.packed_observations()
    np.testing.assert_array_equal(packing.unpack(packed, obs.shape[1:], np.float32), obs)
