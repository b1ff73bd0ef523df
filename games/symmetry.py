"""Board symmetries for data augmentation (AlphaGo Zero's eight for Go; connect four's mirror).

    transforms = symmetry.of("connect_four")          # identity first: (identity, mirror)
    obs, legal = symmetry.augment(transforms, key, observation, legal_actions)   # [B, ...], [B, W]

A transform maps a position to an equivalent one: the observation's board axes (0, 1 of each
observation) are rotated / reflected and every pgx action id is renamed to the id of the same move
on the transformed board. The policy target over a position's legal-move slots needs no change
(each slot keeps its move, renamed), nor do the value targets. Chess and shogi have none here
(castling, pawn direction and the promotion zones break every board symmetry); their tuple holds the
identity alone.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

Grid = Callable  # (array [H, W, ...], numpy or jax.numpy module) -> the transformed array


@dataclasses.dataclass(frozen=True)
class Transform:
    name: str
    grid: Grid  # acts on axes 0 and 1 of one observation (and of the action grid)
    action_map: np.ndarray  # [A] int32: the pgx id each action becomes


def _dihedral() -> list[tuple[str, Grid]]:
    """The eight symmetries of a square: rotations by k quarter turns, each also after a transpose."""
    ops = []
    for k in range(4):
        ops.append((f"rot{90 * k}", lambda x, xp, k=k: xp.rot90(x, k, axes=(0, 1))))
        ops.append((f"rot{90 * k}_transpose",
                    lambda x, xp, k=k: xp.rot90(xp.swapaxes(x, 0, 1), k, axes=(0, 1))))
    return ops


def _mirror() -> list[tuple[str, Grid]]:
    """Identity and the left-right mirror (gravity forbids the rest)."""
    return [("identity", lambda x, xp: x), ("mirror", lambda x, xp: xp.flip(x, 1))]


def _transforms(ops: list[tuple[str, Grid]], action_grid: tuple[int, int], num_actions: int) -> tuple:
    """Each op with its action map: actions 0..H*W-1 are the cells of `action_grid` row by row; any
    further action (Go's pass) is its own image."""
    cells = int(np.prod(action_grid))
    out = []
    for name, grid in ops:
        moved = np.asarray(grid(np.arange(cells).reshape(action_grid), np)).reshape(-1)  # old id at each new cell
        action_map = np.arange(num_actions, dtype=np.int32)
        action_map[moved] = np.arange(cells)
        out.append(Transform(name, grid, action_map))
    return tuple(out)


def of(game: str) -> tuple[Transform, ...]:
    """The board symmetries of `game` (games.make name), identity first."""
    if game == "connect_four":  # actions are the 7 columns
        return _transforms(_mirror(), (1, 7), 7)
    if game == "tic_tac_toe":
        return _transforms(_dihedral(), (3, 3), 9)
    if game.startswith("go_"):
        n = int(game.split("_")[1].split("x")[0])
        return _transforms(_dihedral(), (n, n), n * n + 1)  # the last action is pass
    return (Transform("identity", lambda x, xp: x, np.arange(0, dtype=np.int32)),)


def augment(transforms: tuple[Transform, ...], key: jax.Array, observation: jax.Array,
            legal_actions: jax.Array, *more_actions: jax.Array) -> tuple[jax.Array, ...]:
    """Each position under one uniformly drawn transform (jit-able).

    observation [B, H, W, ...], legal_actions [B, W_slots] pgx ids with -1 pads -> the same shapes;
    `more_actions` (each [B, W_slots], e.g. the next position's moves) are renamed by the same
    position's transform and returned after them."""
    if len(transforms) == 1:
        return (observation, legal_actions, *more_actions)
    choice = jax.random.randint(key, (observation.shape[0],), 0, len(transforms))
    branches = [lambda o, t=t: t.grid(o, jnp) for t in transforms]
    observation = jax.vmap(lambda i, o: jax.lax.switch(i, branches, o))(choice, observation)
    maps = jnp.asarray(np.stack([t.action_map for t in transforms]))  # [K, A]

    def rename(actions):
        renamed = maps[choice[:, None], jnp.maximum(actions, 0)]
        return jnp.where(actions >= 0, renamed, actions)

    return (observation, rename(legal_actions), *(rename(a) for a in more_actions))
