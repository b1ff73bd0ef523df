"""Elo from W/D/L and pentanomial pairs, the SPRT, and BayesElo-style round-robin ratings."""
import math

import numpy as np
import pytest

from arena.ratings.bayeselo import GameResult, fit_ratings, simulate_games
from arena.ratings.elo import Z95, elo_from_score, elo_pentanomial, elo_wdl, pentanomial, score_from_elo
from arena.ratings.sprt import SprtConfig, sprt_pentanomial, sprt_wdl


def test_elo_from_75_percent_is_190_8():
    assert elo_from_score(0.75) == pytest.approx(400 * math.log10(3))  # 190.849
    est = elo_wdl(75, 0, 25)
    assert round(est.elo, 1) == 190.8
    assert score_from_elo(est.elo) == pytest.approx(0.75)
    # Draws count half: 50 wins + 50 draws is also 75%.
    assert elo_wdl(50, 50, 0).elo == pytest.approx(est.elo)


def test_elo_interval_by_hand_and_narrowing():
    est = elo_wdl(75, 0, 25)
    se = math.sqrt(0.75 * 0.25 / 100)  # standard error of the mean score
    lo, hi = (-400 * math.log10(1 / s - 1) for s in (0.75 - 1.96 * se, 0.75 + 1.96 * se))
    assert est.lower == pytest.approx(lo, abs=0.05) and est.upper == pytest.approx(hi, abs=0.05)
    assert est.lower < est.elo < est.upper
    widths = [elo_wdl(75 * k, 0, 25 * k).error for k in (1, 4, 16, 64)]
    assert all(a > b for a, b in zip(widths, widths[1:]))
    assert widths[0] / widths[1] == pytest.approx(2, rel=0.1)  # ~ 1 / sqrt(games)
    even = elo_wdl(30, 40, 30)
    assert even.elo == pytest.approx(0) and even.lower == pytest.approx(-even.upper)


def test_perfect_scores_are_infinite_with_one_sided_interval():
    est = elo_wdl(10, 0, 0)
    assert est.elo == math.inf and est.upper == math.inf and 0 < est.lower < math.inf
    assert elo_wdl(0, 0, 10).elo == -math.inf
    assert elo_wdl(0, 0, 0).games == 0


def test_pentanomial_counts_and_interval():
    assert pentanomial([0, 0.5, 1, 1, 1.5, 2, 2]) == [1, 1, 2, 1, 2]
    with pytest.raises(ValueError):
        pentanomial([0.3])
    # Pairs won 1.5-0.5 and 1-1 only: per-game mean 0.625.
    counts = [0, 0, 10, 10, 0]
    est = elo_pentanomial(counts)
    assert est.score == pytest.approx(0.625) and est.games == 40
    var = ((0.5 - 0.625) ** 2 + (0.75 - 0.625) ** 2) / 2  # pair-score variance
    se = math.sqrt(var / 20)
    assert est.upper == pytest.approx(elo_from_score(0.625 + Z95 * se))
    # The same games counted as a trinomial (15 W, 20 D, 5 L) give a wider interval: each pair's
    # two games are correlated (same opening), which the pentanomial sees.
    assert est.error < elo_wdl(15, 20, 5).error


def test_sprt_all_wins_matches_closed_form():
    cfg = SprtConfig(elo0=0, elo1=50, alpha=0.05, beta=0.05)
    upper = math.log(0.95 / 0.05)
    assert cfg.bounds == pytest.approx((-upper, upper))
    # Only wins: the maximum-likelihood distribution with mean s puts s on a win, so each
    # game adds log(s1 / s0); H1 needs ceil(upper / that) games.
    per_game = math.log(score_from_elo(50) / 0.5)
    needed = math.ceil(upper / per_game)
    assert sprt_wdl(needed - 1, 0, 0, cfg).decision == "continue"
    assert sprt_wdl(needed, 0, 0, cfg).decision == "H1"
    assert sprt_wdl(needed, 0, 0, cfg).llr == pytest.approx(needed * per_game, rel=1e-3)
    assert sprt_wdl(0, 0, needed + 5, cfg).decision == "H0"
    assert sprt_pentanomial([0, 0, 0, 0, needed], cfg).decision == "H1"


def test_sprt_agrees_with_normal_approximation_on_large_samples():
    cfg = SprtConfig(elo0=0, elo1=5)
    w, d, l = 1300, 1000, 1200
    n = w + d + l
    m = (w + d / 2) / n
    v = (w * (1 - m) ** 2 + d * (0.5 - m) ** 2 + l * m * m) / n
    s0, s1 = 0.5, score_from_elo(5)
    approx = n * (s1 - s0) * (2 * m - s0 - s1) / (2 * v)  # fishtest's GSPRT approximation
    assert sprt_wdl(w, d, l, cfg).llr == pytest.approx(approx, rel=0.01)
    assert sprt_wdl(5000, 10000, 5000, cfg).decision == "H0"  # even score vs +5: H0
    assert sprt_wdl(500, 1000, 500, cfg).decision == "continue"  # too few games to tell
    with pytest.raises(ValueError, match="elo1 > elo0"):
        SprtConfig(elo0=5, elo1=0)
    with pytest.raises(ValueError, match="alpha"):
        SprtConfig(alpha=0.7)


def test_round_robin_ratings_recover_simulated_truth():
    truth = {"a": 0.0, "b": 120.0, "c": 300.0, "d": -180.0}
    games = simulate_games(truth, 500, np.random.default_rng(7), advantage=40.0, draw_elo=150.0)
    fit = fit_ratings(games, anchor="a", advantage=None, draw_elo=None)
    by_name = {p.name: p for p in fit.players}
    assert by_name["a"].rating == 0.0 and by_name["a"].lower == by_name["a"].upper == 0.0
    for name, rating in truth.items():
        p = by_name[name]
        assert p.lower - 5 <= rating <= p.upper + 5, (name, p)
        assert abs(p.rating - rating) < 35
    assert [p.name for p in fit.players] == ["c", "b", "a", "d"]
    assert fit.advantage == pytest.approx(40, abs=20)
    assert fit.draw_elo == pytest.approx(150, abs=20)
    # Another anchor shifts every rating by the same amount.
    refit = {p.name: p.rating for p in fit_ratings(games, anchor="d", anchor_rating=1000,
                                                    advantage=None, draw_elo=None).players}
    assert refit["d"] == 1000 and refit["c"] - refit["a"] == pytest.approx(
        by_name["c"].rating - by_name["a"].rating, abs=0.5)


def test_ratings_with_fixed_model_and_lopsided_results():
    truth = {"x": 0.0, "y": 200.0, "z": 400.0}
    games = simulate_games(truth, 400, np.random.default_rng(3))  # BayesElo default model
    fit = {p.name: p for p in fit_ratings(games, anchor="x").players}
    assert abs(fit["y"].rating - 200) < 40 and abs(fit["z"].rating - 400) < 50
    # A player who lost every game stays finite thanks to the virtual-draw prior.
    shutout = [GameResult("s", "r", 1.0), GameResult("r", "s", 0.0)] * 5
    ratings = fit_ratings(shutout, anchor="r")
    top = ratings.players[0]
    assert top.name == "s" and 0 < top.rating < 2000 and math.isfinite(top.upper)
    with pytest.raises(ValueError, match="anchor 'q'"):
        fit_ratings(shutout, anchor="q")
    with pytest.raises(ValueError, match="score"):
        fit_ratings([GameResult("a", "b", 0.3)])


def _games(white: str, black: str, wins: int, losses: int) -> list[GameResult]:
    return [GameResult(white, black, 1.0)] * wins + [GameResult(white, black, 0.0)] * losses


def test_two_player_fit_is_the_closed_form_logit_and_its_fisher_interval():
    """No draws, no white advantage, no prior: the model is logistic in d, so the maximum-likelihood
    difference is 400 log10(W / L) and its standard error 400 / (ln 10 sqrt(n p (1 - p))) (Fisher
    information), computed here by hand. Half the games with each colour."""
    games = _games("a", "b", 32, 18) + _games("b", "a", 18, 32)  # a scores 64 of 100
    fit = fit_ratings(games, anchor="b", prior_draws=0.0, advantage=0.0, draw_elo=0.0)
    a = next(p for p in fit.players if p.name == "a")
    assert a.rating == pytest.approx(400 * math.log10(64 / 36), abs=0.05)  # +99.9
    stderr = 400 / (math.log(10) * math.sqrt(100 * 0.64 * 0.36))
    assert (a.upper - a.rating) == pytest.approx(1.959964 * stderr, rel=0.01)  # +-70.9: not wider
    assert (a.rating - a.lower) == pytest.approx(1.959964 * stderr, rel=0.01)


def test_three_player_fit_agrees_with_zermelos_iteration():
    """Bradley-Terry strengths by Zermelo's fixed-point iteration (Hunter 2004, a different algorithm
    from the fit's BFGS), gamma_i = W_i / sum_j n_ij / (gamma_i + gamma_j): the fit without draws,
    advantage or prior gives 400 log10 of the same strength ratios."""
    wins = {("a", "b"): 30, ("b", "a"): 10, ("a", "c"): 36, ("c", "a"): 4, ("b", "c"): 25, ("c", "b"): 15}
    games = [g for (w, l), n in wins.items() for g in _games(w, l, n // 2, 0) + _games(l, w, 0, n - n // 2)]
    names = ["a", "b", "c"]
    gamma = dict.fromkeys(names, 1.0)
    for _ in range(2000):
        new = {i: sum(wins[(i, j)] for j in names if j != i)
               / sum((wins[(i, j)] + wins[(j, i)]) / (gamma[i] + gamma[j]) for j in names if j != i)
               for i in names}
        gamma = {i: g / new["c"] for i, g in new.items()}
    fit = {p.name: p.rating for p in fit_ratings(games, anchor="c", prior_draws=0.0, advantage=0.0,
                                                 draw_elo=0.0).players}
    for name in names:
        assert fit[name] == pytest.approx(400 * math.log10(gamma[name]), abs=0.1), (name, fit, gamma)
