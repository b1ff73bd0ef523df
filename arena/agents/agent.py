"""The one interface every player implements: a position with its history in, a move out.

`select(board, limit, stop)` gets a `chess.Board` whose move stack is the game so far (networks
with history planes replay it) and returns `(move, info)`. `info` is optional search information,
all keys optional:

    nodes: int         positions searched (MCTS simulations, engine nodes)
    value: float       expected outcome in [-1, 1] for the side to move
    score_cp: int      centipawns for the side to move (engines; networks derive it from value)
    mate: int          mate in N moves for the side to move (negative: getting mated)
    pv: list[Move]     principal variation starting with the chosen move
    depth: int         search depth, where the agent has one
    time: float        seconds spent
    scores: dict[str, float]   per legal move (UCI) the score the move was chosen from (students)
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Any

import chess


@dataclasses.dataclass(frozen=True)
class Option:
    """A UCI option an agent understands (announced by the UCI engine)."""

    name: str  # as shown to GUIs, e.g. "Simulations"
    type: str  # UCI type: spin, check, string
    default: Any
    min: int | None = None  # spin bounds
    max: int | None = None

    def uci(self) -> str:
        default = str(self.default).lower() if isinstance(self.default, bool) else self.default
        line = f"option name {self.name} type {self.type} default {default}"
        if self.type == "spin":
            line += f" min {self.min} max {self.max}"
        return line


@dataclasses.dataclass(frozen=True)
class Limit:
    """How long one move may take; None fields mean "the agent's own default"."""

    nodes: int | None = None  # search nodes / simulations for this move
    movetime: float | None = None  # seconds for this move
    infinite: bool = False  # search until `stop` is set (UCI "go infinite")


class Agent:
    """Base class: subclasses implement `select`; `reset` and `close` default to no-ops."""

    name: str = "agent"

    def select(self, board: chess.Board, limit: Limit | None = None,
               stop: threading.Event | None = None) -> tuple[chess.Move, dict[str, Any]]:
        """Picks a legal move for `board` and returns it with search info. The board must be
        left as it was (push/pop pairs are fine; copy it to keep it)."""
        raise NotImplementedError

    def reset(self, game: int | None = None) -> None:
        """Forgets per-game state (UCI "ucinewgame", a new game in a match). `game`, the game's
        number in its match, restarts a seeded agent's random stream at one derived from its seed
        and that number, so a match replays the same games in whatever process plays each (a
        pool reuses agents across games); None (UCI) lets the stream run on."""

    def options(self) -> list[Option]:
        """UCI options this agent understands."""
        return []

    def configure(self, name: str, value: str) -> None:
        """Sets an option of `options()` (case-insensitive name); bad names or values raise
        ValueError."""
        raise ValueError(f"option '{name}' is not supported by {self.name}")

    def close(self) -> None:
        """Releases processes and devices; the agent is unusable afterwards."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
