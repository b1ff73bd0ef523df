"""Input features a game defines beside pgx's observation: extra planes a network reads, chosen by
name in `network.input_features` (models/network.py checks the names against this registry and
appends them for any network family).

    features.of("connect_four")                                           # ("parity", "threats")
    features.FEATURES["threats"]["connect_four"].planes                   # 2
    x = features.append(("parity", "threats"), "connect_four", obs)       # [B, 6, 7, 2 + 3] float32

Each feature is a function of the observation alone (jit-able, batched), so the search, the learner,
the arena and the evaluator all see the same planes; the planes come after pgx's, in the list's order.

  parity   1 plane: (stones on the board) mod 2, every square. In a game where every move adds one
           stone it says whether the side to move moved first, which pgx's two-plane observation
           (mine, theirs) leaves the network to count; connect four's threat parity turns on it.
  threats  2 planes: the empty squares where the mover's / the opponent's next stone would make the
           game's line (connect four: 4 in a row, tic-tac-toe: 3), playable now or not: the threats of
           Allis's connect-four analysis, given to the network as KataGo gives Go networks its ladder
           and liberty features.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Sequence

import jax
import jax.numpy as jnp

# games whose observation is two stone planes (the mover's, the opponent's) and whose every move adds
# one stone, with the line that wins
IN_A_ROW = {"connect_four": 4, "tic_tac_toe": 3}


@dataclasses.dataclass(frozen=True)
class Feature:
    """One game's definition of a named feature."""

    planes: int  # planes it appends
    compute: Callable[[jax.Array], jax.Array]  # observation [B, H, W, C] float32 -> [B, H, W, planes]


def stone_parity(obs: jax.Array) -> jax.Array:
    """obs [B, H, W, C] of 0 / 1 stone planes -> [B, H, W, 1]: (the sum of obs) mod 2 on every square."""
    parity = jnp.mod(jnp.sum(obs, axis=(1, 2, 3)), 2.0)
    return jnp.broadcast_to(parity[:, None, None, None], obs.shape[:3] + (1,))


def _shifted(plane, dr: int, dc: int):
    """plane [B, H, W] -> out with out[r, c] = plane[r + dr, c + dc], 0 off the board."""
    h, w = plane.shape[1:]
    padded = jnp.pad(plane, ((0, 0), (abs(dr),) * 2, (abs(dc),) * 2))
    return padded[:, abs(dr) + dr:abs(dr) + dr + h, abs(dc) + dc:abs(dc) + dc + w]


def line_threats(stones, empty, k: int):
    """stones, empty [B, H, W] of 0 / 1 -> [B, H, W]: 1 on each empty square that completes k of
    `stones` in a row (any of the four directions) when a stone is put there."""
    threat = jnp.zeros_like(stones)
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        for gap in range(k):  # where the empty square sits in the line of k
            line = empty
            for i in range(k):
                if i != gap:
                    line = line * _shifted(stones, (i - gap) * dr, (i - gap) * dc)
            threat = jnp.maximum(threat, line)
    return threat


def threat_planes(obs: jax.Array, k: int) -> jax.Array:
    """obs [B, H, W, C >= 2] (planes 0 / 1: the mover's stones, the opponent's) -> [B, H, W, 2]: the
    mover's and the opponent's k-in-a-row threats (line_threats)."""
    mine, theirs = obs[..., 0], obs[..., 1]
    empty = 1.0 - jnp.clip(mine + theirs, 0.0, 1.0)
    return jnp.stack([line_threats(mine, empty, k), line_threats(theirs, empty, k)], axis=-1)


# feature name -> game -> its definition there
FEATURES: dict[str, dict[str, Feature]] = {
    "parity": {game: Feature(1, stone_parity) for game in IN_A_ROW},
    "threats": {game: Feature(2, functools.partial(threat_planes, k=k)) for game, k in IN_A_ROW.items()},
}


def of(game: str) -> tuple[str, ...]:
    """The feature names `game` defines."""
    return tuple(name for name, games in FEATURES.items() if game in games)


def append(names: Sequence[str], game: str, obs: jax.Array) -> jax.Array:
    """obs [B, H, W, C] -> float32 [B, H, W, C + their planes]: the observation, then each feature's
    planes in the order of `names`, each computed from the observation alone (names `game` defines:
    a network config's are checked by models/network.py)."""
    x = obs.astype(jnp.float32)
    if not names:
        return x
    undefined = [name for name in names if game not in FEATURES.get(name, {})]
    if undefined:
        raise ValueError(f"{game} defines no input feature {undefined[0]!r} (its features: {', '.join(of(game)) or 'none'})")
    return jnp.concatenate([x] + [FEATURES[name][game].compute(x).astype(jnp.float32) for name in names], axis=-1)


@dataclasses.dataclass(frozen=True)
class HistoryLayout:
    """Where an observation keeps what a position set up from a FEN does not have."""

    planes: int  # planes per position
    positions: int  # positions, the current one first
    empty: tuple[float, ...]  # what an empty history slot's planes hold (before the game's start)
    game_length: tuple[int, ...]  # planes counting the plies played (a FEN's board: 0)


# pgx chess: 8 positions of 14 planes (12 pieces, then "seen once" and "seen twice or more"), then
# colour, the plies played / 512, 4 castling rights and the no-progress count; an empty slot of the
# history reads "seen once".
HISTORY_LAYOUT = {"chess": HistoryLayout(14, 8, (0.0,) * 12 + (1.0, 0.0), (113,))}


def check_history(game: str) -> None:
    """Raises one ValueError line if `game`'s observation has no history planes to drop."""
    if game not in HISTORY_LAYOUT:
        raise ValueError(f"network.history: false drops the earlier positions of an observation; {game}'s "
                         f"observation has none that this knows of (known: {', '.join(HISTORY_LAYOUT)})")


def drop_history(game: str, obs: jax.Array) -> jax.Array:
    """obs [B, H, W, C] -> the same as a position set up from a FEN (no moves before it) shows it: every
    earlier position's planes those of an empty history slot, the plies played 0."""
    check_history(game)
    layout = HISTORY_LAYOUT[game]
    c, start, stop = obs.shape[-1], layout.planes, layout.planes * layout.positions
    replaced = jnp.zeros(c, bool).at[start:stop].set(True).at[jnp.asarray(layout.game_length)].set(True)
    fill = jnp.zeros(c, obs.dtype).at[start:stop].set(jnp.tile(jnp.asarray(layout.empty, obs.dtype),
                                                                layout.positions - 1))
    return jnp.where(replaced, fill, obs)
