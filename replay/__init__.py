"""Replay: game records, chunk files on disk, the window buffer (a Ray actor), the frozen corpus and
the anchor boards. Other rooms use the names below, never another module of replay (shards: the
CRC-checked msgpack shard files distill's records use too)."""
from replay import shards
from replay.anchor import AnchorSet
from replay.buffer import ReplayBuffer
from replay.chunks import read_all
from replay.config import ReplayConfig
from replay.messages import ReplayStats, TrainingBatch
from replay.record import GameRecord, RecordError, SchemaError, decode, encode

__all__ = ["AnchorSet", "GameRecord", "RecordError", "ReplayBuffer", "ReplayConfig", "ReplayStats", "SchemaError",
           "TrainingBatch", "decode", "encode", "read_all", "shards"]
