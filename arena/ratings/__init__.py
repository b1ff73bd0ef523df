"""Ratings from game results (arena's face names what other rooms use).

    elo.py       Elo difference with a 95% interval, from W/D/L counts or pentanomial game pairs
    bayeselo.py  BayesElo-style maximum-likelihood ratings of a round robin, anchored to one player
    sprt.py      the sequential probability ratio test that stops a match once decided
"""
