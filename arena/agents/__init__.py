"""The players, one position at a time, behind one interface (arena's face names them).

    agent.py     Agent: a board with its move stack in, (move, info) out; Limit, Option
    spec.py      agent spec strings (`kind:key=value,...`) -> agents: make_agent, parse_spec
    random.py    a uniformly random legal move
    engine.py    Stockfish and any UCI engine as agents, and finding the Stockfish binary
    network.py   self-play network directories: `policy` (the prior) and `mcts` (search)
    student.py   searchless students: `av:`, `sv:` and `bc:`
    one_ply.py   one-ply move values (the rules' value of a finished game, else 1 - the successor's)
"""
