"""The self-play run (AlphaZero on Ray): orchestrates actors/, replay/ and learner/.

    selfplay/config.py           SelfPlayConfig: one run, composed of each package's config
    selfplay/run.py              run(cfg) -> RunSummary: the collect / train / report loop, shutdown
    selfplay/prepare.py          before the loop: run directory, resume checks, first network, opening book
    selfplay/cluster.py          the run's Ray: start or join, actor names and placement, actor records
    selfplay/state.py            RunState: the session's counters (steps, games, train ratio, rates)
    selfplay/sample_games.py     every n-th chess game to games.pgn
    selfplay/actor_pool.py       the self-play actors: started, two calls queued each, deaths and restarts
    selfplay/learners.py         the learner in this process or in a Ray actor, behind one interface
    selfplay/parameter_store.py  published network variables by version (a Ray actor)
    selfplay/progress.py         live table and TensorBoard scalars
    selfplay/evaluation/         the in-run evaluator: Elo of each new network, runs/<name>/eval/
    selfplay/summary.py          the run's end: summary.json and the lines selfplay.py prints
    selfplay/messages.py         the typed messages crossing process boundaries

The CLI is selfplay.py beside this package (the run's own front: it calls the modules above). Other
rooms use only the run's typed config, the one name of this face (distill's warm start reads it),
loaded on first use (_LAZY: a Ray actor's process importing selfplay.parameter_store stays free of
JAX). Naming more here would close a circle: the run reads distill's records for its anchor boards.
"""
import importlib

_LAZY = {"SelfPlayConfig": "selfplay.config"}

__all__ = ["SelfPlayConfig"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
