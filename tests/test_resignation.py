"""Resignation's threshold chosen from never-resign games (actors/resignation.py): the resign score and the
first resigner against cases worked by hand, the chosen threshold against a ply-by-ply replay of every
game at every candidate, and the config's refusals."""
from __future__ import annotations

import numpy as np
import pytest

from actors import ActorConfig
from actors.resignation import (
    CANDIDATES,
    MIN_RESIGNERS,
    ThresholdTuner,
    choose_threshold,
    classify,
    first_resigners,
    resign_scores,
)

INF = np.inf


def test_resign_score_is_the_larger_of_the_root_value_and_the_best_searched_move():
    slots = np.array([[5, 9, -1], [3, 4, 7], [2, -1, -1]])
    visits = np.array([[3, 0, 0], [1, 2, 0], [0, 0, 0]])
    q = np.array([[-0.8, 0.9, 0.9], [-0.95, -0.7, 0.5], [0.3, 0.0, 0.0]])
    v = np.array([-0.9, -0.99, -0.6])
    # game 0: the unvisited 0.9 and the pad do not count; game 1: the best visited -0.7; game 2: nothing
    # searched, the root value alone
    np.testing.assert_allclose(resign_scores(slots, visits, q, v), [-0.8, -0.7, -0.6])


def test_first_resigner_is_the_first_ply_below_each_threshold():
    scores = np.array([INF, -0.5, -0.95, 0.2, -0.97])
    to_play = np.array([0, 1, 0, 1, 0])
    thresholds = np.array([-0.99, -0.96, -0.9, -0.4, 0.5])
    np.testing.assert_array_equal(first_resigners(scores, to_play, thresholds), [-1, 0, 0, 1, 1])
    # player 1 lost: at -0.96 and -0.9 player 0 (who won) would have resigned first, a false positive
    np.testing.assert_array_equal(classify(scores, to_play, np.array([1.0, -1.0]), thresholds), [0, 2, 2, 1, 1])


def _game(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    plies = int(rng.integers(1, 40))
    scores = rng.uniform(-1.0, 1.0, plies).astype(np.float32)
    scores[: int(rng.integers(0, 5))] = INF  # resignation not allowed yet
    to_play = (np.arange(plies) + int(rng.integers(2))) % 2
    rewards = np.array([[1.0, -1.0], [-1.0, 1.0], [0.0, 0.0]][int(rng.integers(3))])
    return scores, to_play, rewards


def _by_replay(game_list, target: float, current: float) -> float:
    """The chosen threshold worked out game by game, ply by ply, at every candidate."""
    counts = []
    for t in CANDIDATES:
        resigned = false = 0
        for scores, to_play, rewards in game_list:
            for s, p in zip(scores, to_play):
                if s < t:
                    resigned += 1
                    false += rewards[p] >= 0
                    break
        counts.append((float(t), resigned, false))
    if counts[-1][1] < MIN_RESIGNERS:
        return current
    return max(t for t, resigned, false in counts if false <= target * resigned)


@pytest.mark.parametrize("seed", range(4))
def test_chosen_threshold_matches_a_replay_of_every_game(seed):
    rng = np.random.default_rng(seed)
    game_list = [_game(rng) for _ in range(int(rng.integers(10, 80)))]
    outcomes = np.stack([classify(*g) for g in game_list])
    for target in (0.05, 0.3, 0.6):
        assert choose_threshold(outcomes, target, -0.9) == _by_replay(game_list, target, -0.9)


def test_the_threshold_stops_below_the_players_who_went_on_to_draw():
    """40 games whose loser fell to -0.95, 3 whose would-be resigner fell to -0.605 and drew: from -0.60 up
    3 of 43 resignations (7%) are false, so at 5% the threshold is the highest below: -0.61."""
    losing = (np.array([0.1, -0.95]), np.array([1, 0]), np.array([-1.0, 1.0]))
    saved = (np.array([-0.605, 0.0]), np.array([0, 1]), np.array([0.0, 0.0]))
    tuner = ThresholdTuner(start=-0.9, target=0.05, window=100)
    for g in [losing] * 40 + [saved] * 3:
        tuner.add(*g)
    assert tuner.threshold == pytest.approx(-0.61)
    tuner = ThresholdTuner(start=-0.9, target=0.1, window=100)  # at 10% the 7% is allowed: up to a draw's 0.0
    for g in [losing] * 40 + [saved] * 3:
        tuner.add(*g)
    assert tuner.threshold == 0.0


def test_too_few_games_keep_the_start_and_every_candidate_wrong_resigns_below_them_all():
    winner_resigns = (np.array([-0.985, 0.5]), np.array([0, 1]), np.array([1.0, -1.0]))
    tuner = ThresholdTuner(start=-0.8, target=0.05, window=100)
    for _ in range(MIN_RESIGNERS - 1):
        tuner.add(*winner_resigns)
    assert tuner.threshold == -0.8  # 19 would-be resignations: too few to judge
    tuner.add(*winner_resigns)
    assert tuner.threshold == -0.99  # every one false: the highest threshold none of them is below


def test_the_window_forgets_old_games_and_target_zero_never_moves():
    losing = (np.array([-0.95]), np.array([0]), np.array([-1.0, 1.0]))
    winner = (np.array([-0.95]), np.array([0]), np.array([1.0, -1.0]))
    tuner = ThresholdTuner(start=-0.9, target=0.05, window=MIN_RESIGNERS)
    for g in [winner] * MIN_RESIGNERS + [losing] * MIN_RESIGNERS:
        tuner.add(*g)
    assert len(tuner.outcomes) == MIN_RESIGNERS and tuner.threshold == 0.0  # only the losers are left
    fixed = ThresholdTuner(start=-0.9, target=0.0, window=10)
    for g in [winner] * 30:
        fixed.add(*g)
    assert fixed.threshold == -0.9 and not fixed.outcomes


@pytest.mark.parametrize("fields, words", [
    ({"resign_false_positive_target": 0.05, "resign_disabled_fraction": 0.0}, "resign_disabled_fraction > 0"),
    ({"resign_false_positive_target": 0.05, "resign_enabled": False}, "resign_enabled=true"),
    ({"resign_false_positive_target": 1.0}, "must be in [0, 1)"),
    ({"resign_window_games": 0}, "resign_window_games must be >= 1"),
])
def test_config_refuses_a_tuner_without_its_games(fields, words):
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace(")", r"\)")):
        ActorConfig(**fields)
