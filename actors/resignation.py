"""Resignation: when a self-play player gives up, and the threshold chosen from games that never do.

A player resigns before its move when its search's root value and the Q of every move it searched are
below the threshold: its resign score, max(root value, best searched Q), is below it. A fixed threshold
errs as the value moves during a run (a drifting value resigns won games: their outcome is then trained
as a loss). With `actors.resign_false_positive_target` > 0 each actor re-chooses the threshold from its
recent never-resign games, as AlphaGo Zero did (Silver et al. 2017: "v_resign is selected automatically
to keep the fraction of false positives below 5%"): those games play on, so their resign scores say,
for every candidate threshold, who would have resigned first and whether that player then lost.

    tuner = ThresholdTuner(start=-0.9, target=0.05, window=500)
    tuner.add(scores, to_play, rewards)   # one finished never-resign game
    tuner.threshold                       # the start until MIN_RESIGNERS would-be resignations are seen

The window lives in the actor: a resumed run, or an actor Ray restarts, starts again from the configured
threshold.
"""
from __future__ import annotations

import collections

import numpy as np

# Thresholds the tuner considers: every 0.01 from -1 (no value is below it: never resign) to 0 (a draw).
CANDIDATES = np.round(np.linspace(-1.0, 0.0, 101), 2)
# Never-resign games that would have resigned at the highest candidate before the tuner moves at all:
# with fewer, one game more or less moves a false-positive share by more than the 5% it is held to.
MIN_RESIGNERS = 20
_NONE, _TRUE, _FALSE = 0, 1, 2  # per candidate: nobody would resign, the resigner lost, the resigner did not


def resign_scores(slots: np.ndarray, visits: np.ndarray, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """[B] each game's resign score for the player to move: the larger of the root value `v` [B] and the
    best Q (side to move) among the moves searched (`visits` [B, W] > 0 in a real slot, `slots` [B, W]
    pgx ids, -1 pads; `q` [B, W]); the root value alone where no move was searched."""
    visited = (visits > 0) & (slots >= 0)
    best = np.where(visited.any(axis=1), np.where(visited, q, -np.inf).max(axis=1), v)
    return np.maximum(v, best)


def first_resigners(scores: np.ndarray, to_play: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """[K] for each of `thresholds` [K], the player id that would have resigned first in a game whose
    plies had resign scores `scores` [T] (+inf where resignation was not allowed: before
    `resign_min_plies`, parameters older than `resign_after_version`) and players to move `to_play` [T];
    -1 where no ply's score is below the threshold."""
    below = scores[None, :] < thresholds[:, None]  # [K, T]
    first = np.argmax(below, axis=1)
    return np.where(below.any(axis=1), to_play[first], -1)


def classify(scores: np.ndarray, to_play: np.ndarray, rewards: np.ndarray,
             thresholds: np.ndarray = CANDIDATES) -> np.ndarray:
    """[K] int8 per threshold: 0 nobody would have resigned, 1 the first resigner lost (`rewards` [2] per
    player id), 2 it did not (a false positive: a draw counts, as the replay's false-positive rate counts it)."""
    who = first_resigners(scores, to_play, thresholds)
    lost = rewards[np.maximum(who, 0)] < 0
    return np.where(who < 0, _NONE, np.where(lost, _TRUE, _FALSE)).astype(np.int8)


def counts(outcomes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Over the never-resign games `outcomes` [N, K] (`classify` rows): per threshold, the games where
    someone would have resigned [K] (non-decreasing in the threshold) and those that were false [K]."""
    return (outcomes != _NONE).sum(axis=0), (outcomes == _FALSE).sum(axis=0)


def choose_threshold(outcomes: np.ndarray, target: float, current: float,
                     thresholds: np.ndarray = CANDIDATES) -> float:
    """The highest of `thresholds` [K] (ascending) whose would-be resignations over the never-resign
    games `outcomes` [N, K] (`classify` rows) were false positives at most `target` of the time (one
    where nobody would have resigned qualifies: -1 always does); `current` while fewer than
    MIN_RESIGNERS games would have resigned at the highest (too few to say)."""
    resigned, false = counts(outcomes)
    if resigned[-1] < MIN_RESIGNERS:
        return current
    good = false <= target * resigned
    return float(thresholds[np.flatnonzero(good)[-1]])


class ThresholdTuner:
    """The threshold an actor resigns at: `start` (actors.resign_threshold) for ever with `target` 0,
    else re-chosen (choose_threshold) after each never-resign game over the last `window` of them."""

    def __init__(self, start: float, target: float, window: int):
        self.threshold = start
        self.target = target
        self.outcomes: collections.deque[np.ndarray] = collections.deque(maxlen=window)

    def add(self, scores: np.ndarray, to_play: np.ndarray, rewards: np.ndarray) -> None:
        """One finished never-resign game: its resign scores [T] (+inf where not allowed), players to
        move [T] and final rewards [2] per player id."""
        if self.target <= 0:
            return
        self.outcomes.append(classify(np.asarray(scores, np.float32), np.asarray(to_play), np.asarray(rewards)))
        self.threshold = choose_threshold(np.stack(self.outcomes), self.target, self.threshold)
