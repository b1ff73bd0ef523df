"""Anchor boards: a fixed set of oracle-labelled positions mixed into every learner batch.

A run from a warm start (`init.network`) trains on its own search's targets, which are worse than
the oracle's that made the start; with `replay.anchor_fraction` > 0 a share of each batch comes from
the annotated boards instead (their best-move policy and the oracle's value), so self-play improves
the network without unlearning what distillation taught it. selfplay/ reads the boards (distill's
records) and hands the arrays to the replay buffer (`ReplayBuffer.set_anchor`), whose `sample` mixes
them in; this module only holds, samples and mixes them.

    anchor = AnchorSet.of(obs, legal_actions, policy, z)    # N boards; obs [N, *obs_shape] (packed here)
    batch = mix(replay_batch, anchor.sample(k, rng))        # [B - k] replay rows + k anchor rows

Anchor rows carry `ending` ANCHOR_ENDING (no game ended: they count in none of the learner's
trained_<ending> shares, so the progress line shows the rest as their share, and sample_age leaves
them out) and `q` = z (the oracle's value is the best value
target there is, whatever q_ratio says).
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from games import packing
from replay.messages import TrainingBatch

ANCHOR_ENDING = -1  # TrainingBatch.ending of an anchor row (ENDINGS' codes are 0..4)


class AnchorSet(NamedTuple):
    """N oracle-labelled boards, W legal-move slots."""

    observation: packing.PackedObservation  # bits [N, nbytes] uint8, values [N, P] float32
    legal_actions: np.ndarray  # [N, W] int32 pgx ids, -1 pads
    policy: np.ndarray  # [N, W] float32 target over those moves
    z: np.ndarray  # [N] float32 the oracle's value for the side to move, in [-1, 1]

    @classmethod
    def of(cls, observation: np.ndarray, legal_actions: np.ndarray, policy: np.ndarray, z: np.ndarray
           ) -> AnchorSet:
        """From plain observations [N, *obs_shape] (packed here: ~1.4 KB a chess board)."""
        if not len(z):
            raise ValueError("an anchor set needs at least one board")
        if not np.all(packing.exact(observation)):
            raise ValueError("anchor observations do not pack exactly (each plane must hold one value)")
        return cls(packing.pack(np.asarray(observation)), np.asarray(legal_actions, np.int32),
                   np.asarray(policy, np.float32), np.asarray(z, np.float32))

    def __len__(self) -> int:
        return len(self.z)

    def sample(self, n: int, rng: np.random.Generator) -> TrainingBatch:
        """`n` boards drawn uniformly with replacement, as a TrainingBatch (observation packed)."""
        rows = rng.integers(0, len(self), n)
        return TrainingBatch(
            observation=packing.PackedObservation(self.observation.bits[rows], self.observation.values[rows]),
            legal_actions=self.legal_actions[rows], policy=self.policy[rows], z=self.z[rows],
            q=self.z[rows], ending=np.full(n, ANCHOR_ENDING, np.int8), version=np.zeros(n, np.int32))


def anchor_rows(batch_size: int, fraction: float) -> int:
    """Rows of a batch of `batch_size` that come from the anchor set (0 when fraction is 0)."""
    return int(round(batch_size * fraction))


def mix(replay: TrainingBatch, anchor: TrainingBatch, obs_shape: Optional[tuple[int, ...]] = None
        ) -> TrainingBatch:
    """replay rows, then anchor rows (both W move slots wide: `ReplayBuffer.set_anchor` checks). A
    replay batch with plain observations gets the anchor's unpacked (`obs_shape` needed); a field
    the replay batch lacks (None) is dropped from both."""
    anchor_obs = anchor.observation
    if not isinstance(replay.observation, packing.PackedObservation):
        if obs_shape is None:
            raise ValueError("mixing into plain observations needs obs_shape")
        anchor_obs = packing.unpack(anchor_obs, obs_shape, np.asarray(replay.observation).dtype)

    def cat(a, b):
        if a is None:
            return None
        if isinstance(a, packing.PackedObservation):
            return packing.PackedObservation(*(np.concatenate([x, y]) for x, y in zip(a, b)))
        return np.concatenate([np.asarray(a), np.asarray(b).astype(np.asarray(a).dtype)])

    return TrainingBatch(observation=cat(replay.observation, anchor_obs),
                         **{f: cat(getattr(replay, f), getattr(anchor, f)) for f in TrainingBatch._fields
                            if f != "observation"})
