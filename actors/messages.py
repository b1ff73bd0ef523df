"""What a self-play actor reports to the run after each `play` call (selfplay/messages.py re-exports it)."""
from __future__ import annotations

import dataclasses
from typing import Optional


@dataclasses.dataclass(frozen=True)
class PlayReport:
    """One `SelfPlayActor.play(num_plies)` call; its finished games are durable in replay on return."""

    actor: int  # the actor's id
    games: int  # games finished during the call
    positions: int  # positions searched during the call (all game slots, finished or not)
    game_plies: tuple[int, ...]  # plies (= positions recorded) of each finished game
    version: int  # parameter version in use at the end of the call (a learner step)
    seconds: float  # wall time of the call
    node: str  # Ray node id the actor runs on
    resign_threshold: Optional[float] = None  # the actor's at the end of the call (None: resignation off)
    partner_scores: tuple[float, ...] = ()  # the network's score (1, 0.5, 0) in each sparring game finished
