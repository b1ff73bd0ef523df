"""Stockfish as the oracle: the value of a board and of every legal move, via python-chess.

One `analyse` with multipv = number of legal moves scores every move in one search (cheaper than one
search per move, and the moves are compared under the same search). The limit is per move:
`nodes_per_move * n` nodes or `time_per_move * n` seconds for a board with n legal moves.
"""
from __future__ import annotations

import chess
import chess.engine

from arena.engine_agent import find_stockfish, open_uci
from arena.winprob import score_to_win_prob


def open_engine(path: str = "", threads: int = 1, hash_mb: int = 16) -> chess.engine.SimpleEngine:
    """Starts Stockfish (`path`, or wherever `arena.engine_agent.find_stockfish` finds it)."""
    engine = open_uci(find_stockfish(path or None))
    engine.configure({"Threads": threads, "Hash": hash_mb})
    return engine


def board_limit(num_moves: int, nodes_per_move: int = 0, time_per_move: float = 0.0
                ) -> chess.engine.Limit:
    """The search limit for a board with `num_moves` legal moves (nodes take precedence)."""
    if nodes_per_move > 0:
        return chess.engine.Limit(nodes=nodes_per_move * num_moves)
    if time_per_move > 0:
        return chess.engine.Limit(time=time_per_move * num_moves)
    raise ValueError("set nodes_per_move or time_per_move to a positive number")


def move_values(engine: chess.engine.SimpleEngine, board: chess.Board, nodes_per_move: int = 0,
                time_per_move: float = 0.0) -> dict[str, float]:
    """{uci: win probability for the side to move after playing it} for EVERY legal move.

    A move the multipv search did not report (rare) is scored by its own search of the successor.
    """
    moves = list(board.legal_moves)
    if not moves:
        raise ValueError(f"board has no legal move: {board.fen()}")
    infos = engine.analyse(board, board_limit(len(moves), nodes_per_move, time_per_move),
                           multipv=len(moves), game=object())  # fresh game: no hash carry-over
    values: dict[str, float] = {}
    for info in infos:
        if "pv" in info and info["pv"] and "score" in info:
            values[info["pv"][0].uci()] = score_to_win_prob(info["score"].relative)
    for move in moves:
        if move.uci() not in values:
            board.push(move)
            if board.is_game_over(claim_draw=False):
                outcome = board.outcome()
                values[move.uci()] = 0.5 if outcome.winner is None else 1.0
            else:
                info = engine.analyse(board, board_limit(1, nodes_per_move, time_per_move))
                values[move.uci()] = 1.0 - score_to_win_prob(info["score"].relative)
            board.pop()
    return {m.uci(): values[m.uci()] for m in moves}
