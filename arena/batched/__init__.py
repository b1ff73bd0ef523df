"""A network's batched movers over pgx states, for any game (JAX): the in-run evaluator's and bench's.
(arena's face names what other rooms use; gauntlet, mate_puzzles and probe load JAX on use.)

    gauntlet.py       batched games of a mover against one opponent, from start positions
    board_players.py  reference players of the small games on numpy boards (tic-tac-toe, connect four)
    mate_puzzles.py   Lichess mate puzzles solved by a batched chess mover
    probe.py          the probe set (arena/data/probe.jsonl) and how far a network agrees with Stockfish
"""
