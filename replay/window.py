"""The replay window as flat arrays: the positions of the most recent games, sampled in one gather.

    window = Window(window_positions=100_000, max_legal_actions=218)
    window.admit(record)                       # a GameRecord; the oldest games leave past the bound
    batch = window.sample(rng, 256)            # a TrainingBatch, uniform over the window's positions

Positions live in ring arrays (observations packed, games/packing.py: 1,428 bytes per chess
position), the legal moves and policy targets of all of them in a second ring, so sampling is a
few vectorised gathers instead of a Python loop over the batch. Whole games leave oldest first
while the rest still hold `window_positions`: the window holds at least `window_positions` and
less than that plus the newest game's plies. The rings grow by doubling as needed, so memory is at
most about twice the window's own bytes (`nbytes`).

Observations are kept packed when every admitted game's observations pack exactly (every pgx game
here); a game that does not switches the window to raw arrays of the observation's dtype, and its
samples then carry plain observations.
"""
from __future__ import annotations

import collections

import numpy as np

from games import packing
from replay.messages import TrainingBatch
from replay.record import GameRecord


class _Ring:
    """Rows of fixed-shape numpy arrays in a ring; row i of the stream lives at i % capacity."""

    def __init__(self, columns: dict[str, tuple[tuple[int, ...], np.dtype]], capacity: int):
        self.columns = columns
        self.capacity = capacity
        self.arrays = {k: np.zeros((capacity, *shape), dtype) for k, (shape, dtype) in columns.items()}

    def grow(self, needed: int, head: int, tail: int) -> None:
        """Room for `needed` live rows: new arrays holding rows head..tail at the same stream indices."""
        if needed <= self.capacity:
            return
        capacity = max(needed, 2 * self.capacity)
        old = np.arange(head, tail)
        for k, (shape, dtype) in self.columns.items():
            fresh = np.zeros((capacity, *shape), dtype)
            fresh[old % capacity] = self.arrays[k][old % self.capacity]
            self.arrays[k] = fresh
        self.capacity = capacity

    def write(self, start: int, values: dict[str, np.ndarray]) -> None:
        """Writes len(values) rows from stream index `start` on."""
        n = len(next(iter(values.values())))
        rows = np.arange(start, start + n) % self.capacity
        for k, v in values.items():
            self.arrays[k][rows] = v

    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values())


class Window:
    """The most recent `window_positions` positions (whole games), as flat arrays."""

    def __init__(self, window_positions: int, max_legal_actions: int):
        self.window_positions = window_positions
        self.max_legal_actions = max_legal_actions
        self._games: collections.deque[tuple[int, int]] = collections.deque()  # (plies, moves), oldest first
        self._pos = [0, 0]  # stream indices [head, tail) of the live positions
        self._mov = [0, 0]  # ... of the live moves
        self._positions: _Ring | None = None  # made at the first game (its observation shape)
        self._moves = _Ring({"legal": ((), np.int32), "policy": ((), np.float32)}, 1024)
        self.packed = True  # observations kept packed (games/packing.py), else raw
        self.obs_shape: tuple[int, ...] = ()
        self.obs_dtype = np.dtype(np.float32)

    # -- size ------------------------------------------------------------------------------------
    @property
    def positions(self) -> int:
        return self._pos[1] - self._pos[0]

    @property
    def games(self) -> int:
        return len(self._games)

    def nbytes(self) -> int:
        """Bytes the window's arrays take (capacity included)."""
        return self._moves.nbytes() + (self._positions.nbytes() if self._positions else 0)

    # -- admitting ---------------------------------------------------------------------------------
    def admit(self, record: GameRecord) -> None:
        """Adds a game's positions; evicts the oldest games the bound no longer needs."""
        T = record.plies
        if self._positions is None:
            self._start(record)
        obs = self._observations(record)
        self._games.append((T, len(record.policy)))
        while len(self._games) > 1 and self.positions + T - self._games[0][0] >= self.window_positions:
            plies, moves = self._games.popleft()
            self._pos[0] += plies
            self._mov[0] += moves
        head, tail = self._pos
        self._positions.grow(tail + T - head, head, tail)
        self._moves.grow(self._mov[1] + len(record.policy) - self._mov[0], *self._mov)
        starts = self._mov[1] + np.concatenate([[0], np.cumsum(record.num_legal[:-1], dtype=np.int64)])
        self._positions.write(tail, {
            **obs, "z": record.outcome(), "q": record.root_value, "ending": np.full(T, record.ending(), np.int8),
            "version": record.versions(), "move_start": starts[:T], "num_legal": record.num_legal})
        self._moves.write(self._mov[1], {"legal": record.legal_actions, "policy": record.policy})
        self._pos[1] += T
        self._mov[1] += len(record.policy)

    def _start(self, record: GameRecord) -> None:
        self.obs_shape, self.obs_dtype = tuple(record.obs_shape), np.dtype(record.obs_dtype)
        self._positions = _Ring(self._position_columns(), 1024)

    def _position_columns(self) -> dict:
        if self.packed:
            obs = {"bits": ((packing.num_bytes(self.obs_shape),), np.uint8),
                   "values": ((self.obs_shape[-1],), np.float32)}
        else:
            obs = {"obs": (self.obs_shape, self.obs_dtype)}
        return {**obs, "z": ((), np.float32), "q": ((), np.float32), "ending": ((), np.int8),
                "version": ((), np.int32), "move_start": ((), np.int64), "num_legal": ((), np.int16)}

    def _observations(self, record: GameRecord) -> dict[str, np.ndarray]:
        if self.packed:
            try:
                packed = record.packed_observations()
                return {"bits": packed.bits, "values": packed.values}
            except ValueError:
                self._unpack_all()
        return {"obs": np.stack([record.observation(t) for t in range(record.plies)])}

    def _unpack_all(self) -> None:
        """A game whose observations do not pack: the window keeps raw observations from now on."""
        old, head, tail = self._positions, *self._pos
        self.packed = False
        self._positions = _Ring(self._position_columns(), old.capacity)
        rows = np.arange(head, tail) % old.capacity
        live = {k: v[rows] for k, v in old.arrays.items() if k not in ("bits", "values")}
        live["obs"] = packing.unpack(packing.PackedObservation(old.arrays["bits"][rows], old.arrays["values"][rows]),
                                     self.obs_shape, self.obs_dtype)
        self._positions.write(head, live)

    # -- sampling ----------------------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, batch_size: int, unpack: bool = False) -> TrainingBatch:
        """Uniform positions: see ReplayBuffer.sample. Observations packed (PackedObservation) while
        the window is packed, unless `unpack`."""
        if self.positions == 0:
            raise ValueError("the replay buffer is empty")
        flat = rng.integers(0, self.positions, size=batch_size)
        a = self._positions.arrays
        rows = (self._pos[0] + flat) % self._positions.capacity
        start, n = a["move_start"][rows], a["num_legal"][rows].astype(np.int64)
        legal, policy = self._gather_moves(start, n)
        if self.packed:
            observation = packing.PackedObservation(bits=a["bits"][rows], values=a["values"][rows])
            if unpack:
                observation = packing.unpack(observation, self.obs_shape, self.obs_dtype)
        else:
            observation = a["obs"][rows]
        return TrainingBatch(observation=observation, legal_actions=legal, policy=policy, z=a["z"][rows],
                             q=a["q"][rows], ending=a["ending"][rows], version=a["version"][rows])

    def _gather_moves(self, start: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """[B, W] legal moves (-1 pads) and policy (0 pads) of positions whose moves are at
        stream indices start..start + n."""
        B, W = len(start), self.max_legal_actions
        legal = np.full((B, W), -1, np.int32)
        policy = np.zeros((B, W), np.float32)
        m = int(n.max(initial=0))
        if m:
            cols = np.arange(m)
            inside = cols[None, :] < n[:, None]
            idx = (start[:, None] + cols[None, :]) % self._moves.capacity
            legal[:, :m] = np.where(inside, self._moves.arrays["legal"][idx], -1)
            policy[:, :m] = np.where(inside, self._moves.arrays["policy"][idx], 0.0)
        return legal, policy
