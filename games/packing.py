"""Compact observations: a pgx observation as bit-packed planes and one value per plane.

    packed = pack(obs)                          # jnp or numpy; obs [B, *obs_shape], planes last
    obs = unpack(packed, obs_shape, dtype)      # exactly obs again, where `exact(obs)` holds

pgx observations are stacks of planes (chess [8, 8, 119], Go [9, 9, 17], connect four [6, 7, 2]);
within a plane every non-zero square holds the same value: 1 for pieces, repetitions and colour,
the move count / 512 or the no-progress count / 100 on chess's constant planes. So a position is
its non-zero squares as bits (chess: 64 x 119 bits = 952 bytes) plus each plane's value (119
float32), 1,428 bytes instead of 30,464 as float32. Replay keeps and ships observations this way
and the learner unpacks them on its device (learner/train.py). `exact` says whether the two-part
form holds for given observations; tests check it on every game's pgx observations.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


class PackedObservation(NamedTuple):
    """B observations of shape [*spatial, P] (P planes last); a JAX pytree."""

    bits: np.ndarray  # [B, ceil(prod(obs_shape) / 8)] uint8: obs != 0, C order, numpy's packbits
    values: np.ndarray  # [B, P] float32: each plane's non-zero value (0 for an empty plane)


def num_bytes(obs_shape: tuple[int, ...]) -> int:
    """Bytes of one position's `bits`."""
    return math.ceil(math.prod(obs_shape) / 8)


def record_bytes(obs_shape: tuple[int, ...]) -> int:
    """Bytes of one packed position as a record stores it: bits, then the P values as float32."""
    return num_bytes(obs_shape) + 4 * obs_shape[-1]


def _xp(x):
    if isinstance(x, np.ndarray):
        return np
    import jax.numpy as jnp  # here: the replay actor packs numpy only and never loads JAX
    return jnp


def pack(obs) -> PackedObservation:
    """obs [B, *obs_shape] (any dtype; planes on the last axis) -> PackedObservation. jnp inputs
    stay on their device (jit-able); numpy inputs give numpy."""
    xp = _xp(obs)
    B, P = obs.shape[0], obs.shape[-1]
    flat = obs.reshape(B, -1, P)  # [B, squares, P]
    nonzero = flat != 0
    first = xp.argmax(nonzero, axis=1)  # [B, P] the first non-zero square of each plane (0 if none)
    values = xp.take_along_axis(flat, first[:, None, :], axis=1)[:, 0, :].astype(xp.float32)
    bits = xp.packbits(nonzero.reshape(B, -1), axis=1)
    return PackedObservation(bits=bits, values=values)


def unpack(packed: PackedObservation, obs_shape: tuple[int, ...], dtype) -> np.ndarray:
    """PackedObservation -> [B, *obs_shape] of `dtype` (jnp for jnp inputs, on their device)."""
    xp = _xp(packed.bits)
    B, P = packed.bits.shape[0], obs_shape[-1]
    n = math.prod(obs_shape)
    nonzero = xp.unpackbits(packed.bits, axis=1, count=n).reshape(B, -1, P)
    obs = nonzero.astype(xp.float32) * packed.values[:, None, :]
    return obs.reshape((B, *obs_shape)).astype(dtype)


def exact(obs) -> np.ndarray:
    """[B] bool: obs [B, *obs_shape] unpacks from its packed form exactly (each plane holds one
    non-zero value)."""
    xp = _xp(obs)
    back = unpack(pack(obs), tuple(obs.shape[1:]), obs.dtype)
    return xp.all((back == obs).reshape(obs.shape[0], -1), axis=1)


def to_bytes(packed: PackedObservation) -> list[bytes]:
    """Host PackedObservation -> one bytes per position (bits, then the values as little-endian
    float32): what a game record stores."""
    rows = np.concatenate([np.asarray(packed.bits, np.uint8),
                           np.asarray(packed.values, "<f4").view(np.uint8)], axis=1)
    return [r.tobytes() for r in rows]


def from_bytes(rows: list[bytes] | bytes, obs_shape: tuple[int, ...]) -> PackedObservation:
    """`to_bytes`'s rows (a list, or their concatenation) -> host PackedObservation [T, ...]."""
    data = b"".join(rows) if isinstance(rows, list) else rows
    nb, width = num_bytes(obs_shape), record_bytes(obs_shape)
    flat = np.frombuffer(data, np.uint8)
    if flat.size % width:
        raise ValueError(f"packed observations of {len(data)} bytes are not whole positions of {width} bytes")
    table = flat.reshape(-1, width)
    return PackedObservation(bits=table[:, :nb].copy(), values=table[:, nb:].copy().view("<f4").astype(np.float32))
