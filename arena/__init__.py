"""Arena: every kind of player behind one interface (random, Stockfish and UCI engines, self-play
networks with or without search, searchless students), match play, ratings (Elo, BayesElo-style,
SPRT), evaluation suites and UCI.

    from arena import make_agent
    agent = make_agent("stockfish:skill=0,nodes=1000")   # or "mcts:net=runs/x/network,sims=64", ...
    move, info = agent.select(board)   # board: chess.Board with its move stack

Modules import JAX only where a network agent needs it, so random/engine matches start fast.
"""
from arena.agent import Agent, Limit, Option
from arena.spec import AgentSpec, SpecError, make_agent, parse_spec

__all__ = ["Agent", "AgentSpec", "Limit", "Option", "SpecError", "make_agent", "parse_spec"]
