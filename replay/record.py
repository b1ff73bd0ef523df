"""The game record: one finished self-play game, as actors stream it to the replay buffer and disk.

A record holds, per position t (T = plies played):
  observation   the network input, exact: `obs_encoding` "packed" (games/packing.py: the planes'
                bits and each plane's value, 1,428 bytes for chess) or "zlib" (zlib-compressed raw
                bytes of the pgx observation); the actions from `init_key` also replay it
  to_play       [T] pgx player id to move
  num_legal     [T] number of legal moves n_t; the next three are concatenated over t ([sum n_t]):
  legal_actions pgx action ids of the legal moves (the search's slots, in slot order)
  policy        the search's policy target pi over those moves (sparse: legal moves only)
  child_q       the search's Q value of each move, from the side to move
  root_value    [T] the search's root value, from the side to move
  actions       [T] the pgx action played
and per game: the outcome (`rewards` [2] per pgx player id), plies, how it ended, the parameter
versions that played it, the resignation bookkeeping, the sparring partner that played one side (if
any), and the init key (with `actions` it rebuilds every pgx state exactly, e.g. for FEN + move history
in the corpus or PGN).

On disk a record is one msgpack frame `["zcgr", SCHEMA_VERSION, crc32(body), body]` (replay/shards.py,
the frame of every record the project writes), `body` the msgpack map of the fields with arrays as
little-endian bytes, so corruption is detected per record.
Schema versions: 1 named the legal-move count `legal`; 2 names it `num_legal`; 3 added `full_search`
(playout cap randomization's fast plies, since retired); 4 adds `obs_encoding` (older records:
"zlib"); 5 drops `full_search` (read from 3 and 4, and ignored); 6 adds `partner` and `partner_player`
(older records: self-play, no partner). All are read.
"""
from __future__ import annotations

import dataclasses
import zlib
from typing import Any, Literal

import msgpack
import numpy as np

from games import packing
from replay.shards import RecordError, SchemaError, frame_payload, pack_frame  # noqa: F401 (errors re-exported)

MAGIC = "zcgr"
SCHEMA_VERSION = 6
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6)
ObsEncoding = Literal["packed", "zlib"]
_RENAMED = {1: {"legal": "num_legal"}}  # per older schema version: its field name -> the current one
_ADDED = {"obs_encoding": 4, "partner": 6, "partner_player": 6}  # field -> first schema with it (older: default)


# Array fields and their on-disk dtypes (little-endian).
_ARRAYS = {
    "init_key": "<u4", "actions": "<i4", "to_play": "<i1", "num_legal": "<i2",
    "legal_actions": "<i4", "policy": "<f4", "child_q": "<f4", "root_value": "<f4",
    "rewards": "<f4", "param_versions": "<i8",
}


@dataclasses.dataclass
class GameRecord:
    """One finished game; arrays are numpy, shapes as in the module docstring."""

    game: str  # game name ("chess", "tic_tac_toe", ...)
    game_id: str  # unique id "<session>-a<actor>-g<serial>": session = actor start time (ms, hex), serial = game of that actor
    init_key: np.ndarray  # [2] uint32 raw key data of `game.init` for this game
    actions: np.ndarray  # [T] pgx actions played
    observations: list[bytes]  # T observations, each of obs_shape / obs_dtype, encoded as `obs_encoding` says
    obs_shape: tuple[int, ...]  # pgx observation shape
    obs_dtype: str  # numpy dtype string of the observation ("float32", "bool")
    to_play: np.ndarray  # [T] pgx player id to move
    num_legal: np.ndarray  # [T] legal-move count per position
    legal_actions: np.ndarray  # [sum num_legal] pgx ids of the legal moves
    policy: np.ndarray  # [sum num_legal] policy target pi
    child_q: np.ndarray  # [sum num_legal] Q per move, side to move
    root_value: np.ndarray  # [T] root value, side to move
    rewards: np.ndarray  # [2] final reward per pgx player id (+1 win, -1 loss, 0 draw)
    termination: str  # "rules" (mate, stalemate, draw rules), "cap" (ply limit: draw), "resign", "adjudicated" (material)
    resign_disabled: bool  # this game was one of the never-resign fraction
    resign_would_have: int  # never-resign games: pgx player id that would have resigned first, or -1
    param_versions: np.ndarray  # [2] first and last parameter version that played this game
    created: float  # unix time the game finished
    obs_encoding: ObsEncoding = "zlib"  # "packed": games/packing.py's bytes; "zlib": compressed raw bytes
    partner: str = ""  # the engine that played one side (actors.sparring_fraction), e.g. "Stockfish skill 0 depth 1"
    partner_player: int = -1  # the pgx player id it played; -1: self-play, the network played both sides

    @property
    def plies(self) -> int:
        return int(len(self.actions))

    @property
    def resigned(self) -> bool:
        return self.termination == "resign"

    def ending(self) -> int:
        """How the game ended, as an index into replay.messages.ENDINGS: won by the rules, resigned,
        capped (the ply limit), drawn by the rules, adjudicated by material."""
        if self.termination == "resign":
            return 1
        if self.termination == "cap":
            return 2
        if self.termination == "adjudicated":
            return 4
        return 0 if np.any(self.rewards != 0) else 3

    def versions(self) -> np.ndarray:
        """[T] int32 estimated parameter version of the network that played each position: the
        first and last versions that played the game (`param_versions`), interpolated over its plies."""
        first, last = (int(x) for x in self.param_versions[:2])
        return np.rint(np.linspace(first, last, self.plies)).astype(np.int32)

    def outcome(self) -> np.ndarray:
        """[T] z: the final reward of the player to move at each position."""
        return self.rewards[self.to_play.astype(np.int64)].astype(np.float32)

    def observation(self, t: int) -> np.ndarray:
        """The network input of position t, [*obs_shape]."""
        if self.obs_encoding == "packed":
            return packing.unpack(self.packed_observations(t, t + 1), self.obs_shape, self.obs_dtype)[0]
        raw = zlib.decompress(self.observations[t])
        return np.frombuffer(raw, dtype=self.obs_dtype).reshape(self.obs_shape)

    def packed_observations(self, start: int = 0, stop: int | None = None) -> packing.PackedObservation:
        """Positions start..stop in packed form ([T, ...]); a "zlib" record is packed here, and a
        ValueError says so if its observations are not exactly packable (games/packing.py)."""
        rows = self.observations[start:stop]
        if self.obs_encoding == "packed":
            return packing.from_bytes(rows, self.obs_shape)
        obs = np.stack([np.frombuffer(zlib.decompress(r), dtype=self.obs_dtype).reshape(self.obs_shape)
                        for r in rows]) if rows else np.zeros((0, *self.obs_shape), self.obs_dtype)
        if not packing.exact(obs).all():
            raise ValueError(f"game {self.game_id}: its observations are not planes of one value each")
        return packing.pack(obs)

    def offsets(self) -> np.ndarray:
        """[T + 1] start of each position's moves in the concatenated per-move arrays."""
        return np.concatenate([[0], np.cumsum(self.num_legal, dtype=np.int64)])

    def partner_score(self) -> float:
        """A sparring game's score for the network: 1 won, 0.5 drawn, 0 lost (ValueError in self-play)."""
        if self.partner_player < 0:
            raise ValueError(f"game {self.game_id}: self-play, no partner")
        return float(self.rewards[1 - self.partner_player] + 1) / 2

    def resign_false_positive(self) -> bool:
        """A never-resign game where the player who would have resigned did not lose."""
        if self.resign_would_have < 0:
            return False
        return bool(self.rewards[self.resign_would_have] >= 0)


def compress_observation(obs: np.ndarray) -> bytes:
    """One observation [*obs_shape] -> zlib bytes of its raw contents (level 1: fast, plenty here)."""
    return zlib.compress(np.ascontiguousarray(obs).tobytes(), 1)


def encode(record: GameRecord) -> bytes:
    """GameRecord -> one checksummed msgpack frame."""
    body: dict[str, Any] = {}
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if f.name in _ARRAYS:
            value = np.asarray(value).astype(_ARRAYS[f.name]).tobytes()
        elif f.name == "obs_shape":
            value = list(value)
        body[f.name] = value
    return pack_frame(MAGIC, SCHEMA_VERSION, msgpack.packb(body, use_bin_type=True))


def decode_frame(frame: Any, where: str = "record") -> GameRecord:
    """An unpacked frame (the list `encode` packed) -> GameRecord; RecordError names `where`."""
    version, payload = frame_payload(frame, MAGIC, READABLE_VERSIONS, where, kind="zerochess game record")
    try:
        body = msgpack.unpackb(payload, raw=False)
        for old, new in _RENAMED.get(version, {}).items():
            body[new] = body.pop(old)
        kwargs = {}
        for f in dataclasses.fields(GameRecord):
            if version < _ADDED.get(f.name, 0):
                continue  # older records: the field's default (zlib observations, no partner)
            value = body[f.name]
            if f.name in _ARRAYS:
                value = np.frombuffer(value, dtype=_ARRAYS[f.name]).copy()
            elif f.name == "obs_shape":
                value = tuple(value)
            kwargs[f.name] = value
        record = GameRecord(**kwargs)
    except (KeyError, TypeError, ValueError, msgpack.UnpackException) as e:
        raise RecordError(f"{where}: malformed record body ({e})") from None
    if (int(record.num_legal.sum()) != len(record.policy) or len(record.observations) != record.plies
            or record.obs_encoding not in ("packed", "zlib")):
        raise RecordError(f"{where}: inconsistent record lengths")
    return record


def decode(data: bytes, where: str = "record") -> GameRecord:
    """One frame's bytes -> GameRecord (RecordError if corrupt)."""
    try:
        frame = msgpack.unpackb(data, raw=False)
    except (ValueError, msgpack.UnpackException) as e:
        raise RecordError(f"{where}: not decodable as msgpack ({e})") from None
    return decode_frame(frame, where)
