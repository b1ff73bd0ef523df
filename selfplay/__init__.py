"""The self-play run (AlphaZero on Ray): orchestrates actors/, replay/ and learner/.

    selfplay/config.py           SelfPlayConfig: one run, composed of each package's config
    selfplay/run.py              run(cfg) -> RunSummary: the collect / train / report loop, shutdown
    selfplay/learners.py         the learner in this process or in a Ray actor, behind one interface
    selfplay/parameter_store.py  published network variables by version (a Ray actor)
    selfplay/progress.py         live table and TensorBoard scalars
    selfplay/messages.py         the typed messages crossing process boundaries

The CLI is selfplay.py beside this package. Nothing below this package imports it.
"""
