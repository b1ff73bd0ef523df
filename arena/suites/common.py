"""How the suites call a player: any `Agent`, or a duck-typed player with `select(board)` and a
`name` (distill's players), where `reset` and the per-move limit are optional."""
from __future__ import annotations

import chess

from arena.agents.agent import Limit


def new_position(agent) -> None:
    """Forgets per-game state (engines: ucinewgame) so positions do not share search trees."""
    reset = getattr(agent, "reset", None)
    if callable(reset):
        reset()


def select(agent, board: chess.Board, move_limit: Limit | None) -> tuple[chess.Move, dict]:
    """The player's move and info for `board` (left as it was); no limit: its own default."""
    move, info = agent.select(board) if move_limit is None else agent.select(board, move_limit)
    return move, dict(info or {})


def fresh_move(agent, board: chess.Board) -> chess.Move:
    """The player's move for `board` as a new position (no tree or engine state carried over), at
    its own default limit: what imitation and one-board probes ask of any player."""
    new_position(agent)
    return select(agent, board, None)[0]
