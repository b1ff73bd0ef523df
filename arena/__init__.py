"""Arena: every kind of player behind one interface (random, Stockfish and UCI engines, self-play
networks with or without search, searchless students), match play, ratings (Elo, BayesElo-style,
SPRT), evaluation suites and UCI.

    from arena import make_agent
    agent = make_agent("stockfish:skill=0,nodes=1000")   # or "mcts:net=runs/x/network,sims=64", ...
    move, info = agent.select(board)   # board: chess.Board with its move stack

    arena/agents/    the players, one position at a time: the Agent interface, spec strings, random,
                     engines (and finding Stockfish), networks (policy, mcts), students (av, sv, bc)
    arena/play/      games between agents: one game and its PGN, opening books, matches, the UCI front
    arena/ratings/   Elo from W/D/L or game pairs, BayesElo-style ratings, SPRT
    arena/suites/    evaluation suites for any agent: puzzles, EPD, STS, action accuracy
    arena/batched/   a network's batched movers over pgx states, for any game: gauntlets, the small
                     games' reference players, mate puzzles, the probe set (the in-run evaluator's)
    arena/data/      probe.jsonl, the probe set

Other rooms use the names below, never a module of arena. Modules import JAX only where a network
agent needs it, so random/engine matches start fast: the names in _LAZY (students, the batched
modules) load on first use.
"""
import importlib

from arena.agents.agent import Agent, Limit, Option
from arena.agents.engine import EngineDiedError
from arena.agents.network import search_config
from arena.agents.one_ply import capture_reply_values_many, one_ply_values, one_ply_values_many
from arena.agents.spec import AgentSpec, SpecError, check_agent, make_agent, parse_spec
from arena.batched.board_players import alphabeta_move, board_mover, ladder_opponents, parse_player
from arena.play.game import Adjudication, append_pgn, play_game
from arena.play.match import MatchConfig, run_match
from arena.play.openings import START, Book, Opening, book_files, book_path, parse_epd, pick
from arena.play.uci import UciEngine
from arena.ratings.bayeselo import GameResult, fit_ratings
from arena.suites import (
                          BAND_WIDTH,
                          Puzzle,
                          action_metrics,
                          agent_action_metrics,
                          fresh_move,
                          rating_band,
                          read_puzzles,
                          render_table,
                          run_suite,
                          solve_puzzle,
)

_LAZY = {  # name -> the module defining it (or the module itself, by its own name), imported on first use
    "StudentAgent": "arena.agents.student", "load_student": "arena.agents.student",  # scipy, JAX on use
    "gauntlet": "arena.batched.gauntlet", "mate_puzzles": "arena.batched.mate_puzzles",  # JAX
    "probe": "arena.batched.probe",
}

__all__ = [
    "Adjudication", "Agent", "AgentSpec", "BAND_WIDTH", "Book", "EngineDiedError", "GameResult", "Limit",
    "MatchConfig", "Opening", "Option", "Puzzle", "START", "SpecError", "StudentAgent", "UciEngine",
    "action_metrics", "agent_action_metrics", "alphabeta_move", "append_pgn", "board_mover", "book_files", "book_path",
    "capture_reply_values_many", "check_agent", "fit_ratings", "fresh_move", "gauntlet", "ladder_opponents",
    "load_student", "make_agent", "mate_puzzles",
    "one_ply_values", "one_ply_values_many", "parse_epd", "parse_player", "parse_spec", "pick", "play_game",
    "probe", "rating_band",
    "read_puzzles", "render_table", "run_match", "run_suite", "search_config", "solve_puzzle",
]


def __getattr__(name: str):
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name])
        return module if module.__name__.rpartition(".")[2] == name else getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
