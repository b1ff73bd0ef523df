"""Annotated boards as a self-play run's anchor set (replay/anchor.py): a `distill.py annotate`
directory's training boards with the oracle's best move (one-hot) and value, which the replay buffer
mixes into every learner batch so that a run from a warm start keeps what distillation taught it."""
from __future__ import annotations

from distill.config import DataConfig
from distill.records import RecordStore
from distill.warm_start import load_boards
from replay import AnchorSet


def read_anchor_set(records: str, max_boards: int, max_legal_actions: int) -> AnchorSet:
    """The first `max_boards` boards of `records`' train split (distill's held-out games stay out).
    Raises FileNotFoundError / ValueError for a missing or unreadable directory."""
    store = RecordStore(records)
    rows = store.split("train", DataConfig().test_fraction)[:max_boards]
    boards = load_boards(store, rows, max_legal_actions, temperature=0.0)
    return AnchorSet.of(boards.observation, boards.legal_actions, boards.policy, boards.z)
