"""Replay: game records, chunk files on disk, the window buffer (a Ray actor) and the frozen corpus."""
from replay.buffer import ReplayBuffer
from replay.config import ReplayConfig
from replay.messages import ReplayStats, TrainingBatch
from replay.record import GameRecord, RecordError, decode, encode

__all__ = ["GameRecord", "RecordError", "ReplayBuffer", "ReplayConfig", "ReplayStats", "TrainingBatch",
           "decode", "encode"]
