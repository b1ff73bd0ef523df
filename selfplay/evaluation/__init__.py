"""The in-run evaluator: how strong is each new network of a run (Elo against fixed anchors, mate
puzzles, agreement with Stockfish), rated and written to runs/<name>/eval/ as the run goes.

    selfplay/evaluation/handle.py     EvaluatorHandle: the run's side (the Ray actor, when due, one in flight)
    selfplay/evaluation/evaluator.py  Evaluator: the Ray actor; the evaluation of one network, ratings refit
    selfplay/evaluation/opponents.py  the ladder and the gauntlet games: random, earlier networks, engines
    selfplay/evaluation/probes.py     mate puzzles and the Stockfish probe set (chess)
    selfplay/evaluation/learning.py   is the run learning? the probe figures against its first evaluation
    selfplay/evaluation/store.py      what is stored: games.csv, ratings.csv (read back on a resume), player names
    selfplay/evaluation/plot.py       progress.png

The batched games themselves are arena/batched/gauntlet.py's (any mover against any other, any pgx game).
The rest of selfplay/ uses what this file names.
"""
from selfplay.evaluation.evaluator import Evaluator
from selfplay.evaluation.handle import EvaluatorHandle
from selfplay.evaluation.learning import LearningCheck, learning_text
from selfplay.evaluation.store import PROBE_FIELDS

__all__ = ["Evaluator", "EvaluatorHandle", "LearningCheck", "PROBE_FIELDS", "learning_text"]
