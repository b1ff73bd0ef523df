"""BayesElo-style maximum-likelihood ratings for a round robin, anchored to one player.

The model of BayesElo (Remi Coulom): white i against black j with d = r_i - r_j + advantage,
    P(white wins) = f(d - draw_elo),  P(black wins) = f(-d - draw_elo),  P(draw) = the rest,
with f(x) = 1 / (1 + 10^(-x / 400)). Ratings, the white advantage and draw_elo are fitted by
maximum likelihood; a prior of `prior_draws` virtual draws between every pair that met keeps a
player with 100% (or 0%) finite, as BayesElo's default prior does. Like BayesElo, advantage and
draw_elo default to fixed values (32.8, 97.3); pass None to fit them too (needs many games with
draws; small lopsided tournaments make the fit degenerate). The anchor's rating is fixed (default
0) and 95% intervals of the others come from the inverse Hessian of the log-likelihood.
"""
from __future__ import annotations

import dataclasses
import math
from collections import Counter
from typing import Iterable, Sequence

import numpy as np

from arena.ratings.elo import Z95

_LN10_400 = math.log(10) / 400


@dataclasses.dataclass(frozen=True)
class GameResult:
    """One game for the rating fit: player names and white's score (1, 0.5 or 0)."""

    white: str
    black: str
    score: float  # white's points


@dataclasses.dataclass(frozen=True)
class PlayerRating:
    name: str
    rating: float
    lower: float  # 95% interval, relative to the anchor (whose interval is a point)
    upper: float
    games: int
    score: float  # mean points per game


@dataclasses.dataclass(frozen=True)
class Ratings:
    players: tuple[PlayerRating, ...]  # sorted by rating, strongest first
    anchor: str
    advantage: float  # fitted white advantage (Elo)
    draw_elo: float  # fitted draw_elo (Elo)

    def table(self) -> list[dict]:
        return [dataclasses.asdict(p) for p in self.players]


def _log_f(x):
    """log f(x) for f(x) = 1 / (1 + 10^(-x/400)), stable for large |x|."""
    return -np.logaddexp(0.0, -_LN10_400 * x)


DEFAULT_ADVANTAGE = 32.8  # BayesElo's default white advantage
DEFAULT_DRAW_ELO = 97.3  # BayesElo's default draw_elo


def _unpack(params, n_free, anchor_index, anchor_rating, advantage, draw_elo):
    """params = free ratings [+ advantage if fitted] [+ log draw_elo if fitted]."""
    ratings = np.insert(params[:n_free], anchor_index, anchor_rating)
    k = n_free
    if advantage is None:
        advantage, k = params[k], k + 1
    if draw_elo is None:
        draw_elo = math.exp(min(params[k], 20.0))
    return ratings, advantage, draw_elo


def _neg_log_likelihood(params, n_free, white, black, wins, draws, losses, anchor_index,
                        anchor_rating, advantage, draw_elo):
    ratings, advantage, draw_elo = _unpack(params, n_free, anchor_index, anchor_rating,
                                           advantage, draw_elo)
    d = ratings[white] - ratings[black] + advantage
    log_win = _log_f(d - draw_elo)
    log_loss = _log_f(-d - draw_elo)
    p_draw = np.clip(1.0 - np.exp(log_win) - np.exp(log_loss), 1e-300, 1.0)
    return -(wins @ log_win + losses @ log_loss + draws @ np.log(p_draw))


def _hessian(fun, x, step=1e-2):
    """Central-difference Hessian of a scalar function."""
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(i, n):
            def at(di, dj):
                y = x.copy()
                y[i] += di
                y[j] += dj
                return fun(y)
            h[i, j] = h[j, i] = (at(step, step) - at(step, -step) - at(-step, step)
                                 + at(-step, -step)) / (4 * step * step)
    return h


def fit_ratings(games: Iterable[GameResult], anchor: str | None = None,
                anchor_rating: float = 0.0, prior_draws: float = 2.0,
                advantage: float | None = DEFAULT_ADVANTAGE,
                draw_elo: float | None = DEFAULT_DRAW_ELO,
                players: Sequence[str] | None = None) -> Ratings:
    """Fits ratings to `games`; `anchor` (default: the first player) gets `anchor_rating`.

    advantage / draw_elo: fixed values, or None to fit them. prior_draws: virtual draws per
    pair of players that met (half with each colour).
    """
    from scipy import optimize  # here, not at the top: a self-play driver imports this module (scipy is slow to import)

    games = list(games)
    names = list(players) if players else list(dict.fromkeys(
        n for g in games for n in (g.white, g.black)))
    if len(names) < 2:
        raise ValueError("ratings need at least two players")
    anchor = names[0] if anchor is None else anchor
    if anchor not in names:
        raise ValueError(f"anchor '{anchor}' is not a player (players: {', '.join(names)})")
    index = {n: i for i, n in enumerate(names)}
    counts = Counter()
    for g in games:
        if g.score not in (0.0, 0.5, 1.0):
            raise ValueError(f"game score {g.score} is not 0, 0.5 or 1")
        counts[(index[g.white], index[g.black], g.score)] += 1
    pairs = sorted({(w, b) for (w, b, _) in counts})
    # Virtual draws: prior_draws per unordered pair that met, split over both colours.
    met = {tuple(sorted(p)) for p in pairs}
    rows = sorted(set(pairs) | {(a, b) for a, b in met} | {(b, a) for a, b in met})
    white = np.array([w for w, _ in rows])
    black = np.array([b for _, b in rows])
    wins = np.array([counts[(w, b, 1.0)] for w, b in rows], float)
    losses = np.array([counts[(w, b, 0.0)] for w, b in rows], float)
    draws = np.array([counts[(w, b, 0.5)] + prior_draws / 2 for w, b in rows], float)

    anchor_index, n_free = index[anchor], len(names) - 1
    args = (n_free, white, black, wins, draws, losses, anchor_index, anchor_rating, advantage,
            draw_elo)
    x0 = [anchor_rating] * n_free + ([0.0] if advantage is None else []) + (
        [math.log(DEFAULT_DRAW_ELO)] if draw_elo is None else [])
    x0 = np.array(x0, float)
    fun = lambda x: _neg_log_likelihood(x, *args)  # noqa: E731
    result = optimize.minimize(fun, x0, method="BFGS", options={"gtol": 1e-6, "maxiter": 2000})
    x = result.x
    try:
        covariance = np.linalg.inv(_hessian(fun, x))
        stderr = np.sqrt(np.clip(np.diag(covariance)[:n_free], 0, None))
    except np.linalg.LinAlgError:
        stderr = np.full(n_free, np.inf)
    ratings, fitted_advantage, fitted_draw_elo = _unpack(x, *args[0:1], *args[6:])
    stderr = np.insert(stderr, anchor_index, 0.0)

    played = Counter()
    points = Counter()
    for g in games:
        played[g.white] += 1
        played[g.black] += 1
        points[g.white] += g.score
        points[g.black] += 1 - g.score
    table = [PlayerRating(n, float(ratings[i]), float(ratings[i] - Z95 * stderr[i]),
                          float(ratings[i] + Z95 * stderr[i]), played[n],
                          points[n] / played[n] if played[n] else 0.0)
             for n, i in index.items()]
    table.sort(key=lambda p: -p.rating)
    return Ratings(tuple(table), anchor, float(fitted_advantage), float(fitted_draw_elo))


def simulate_games(ratings: dict[str, float], games_per_pair: int, rng: np.random.Generator,
                   advantage: float = DEFAULT_ADVANTAGE,
                   draw_elo: float = DEFAULT_DRAW_ELO) -> list[GameResult]:
    """Round-robin results drawn from the BayesElo model (for tests and sanity checks)."""
    names = list(ratings)
    f = lambda x: 1 / (1 + 10 ** (-x / 400))  # noqa: E731
    games = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for k in range(games_per_pair):
                w, bl = (a, b) if k % 2 == 0 else (b, a)
                d = ratings[w] - ratings[bl] + advantage
                p_win, p_loss = f(d - draw_elo), f(-d - draw_elo)
                u = rng.random()
                games.append(GameResult(w, bl, 1.0 if u < p_win else 0.0 if u < p_win + p_loss else 0.5))
    return games
