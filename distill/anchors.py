"""Annotated boards as a self-play run's anchor set (replay/anchor.py): a `distill.py annotate`
directory's training boards with the oracle's policy (one-hot on its best move, or its move win
probabilities softened by a temperature) and value, which the replay buffer mixes into every learner
batch so that a run from a warm start keeps what distillation taught it."""
from __future__ import annotations

from distill.config import DataConfig
from distill.records import RecordStore
from distill.warm_start import load_boards
from replay import AnchorSet


def read_anchor_set(records: str, max_boards: int, max_legal_actions: int, temperature: float = 0.0) -> AnchorSet:
    """The first `max_boards` boards of `records`' train split (distill's held-out games stay out), their
    policy one-hot on the best move (`temperature` 0) or softmax(move win probabilities / temperature).
    Raises FileNotFoundError / ValueError for a missing or unreadable directory."""
    store = RecordStore(records)
    rows = store.split("train", DataConfig().test_fraction)[:max_boards]
    boards = load_boards(store, rows, max_legal_actions, temperature=temperature)
    return AnchorSet.of(boards.observation, boards.legal_actions, boards.policy, boards.z)
