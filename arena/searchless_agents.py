"""Searchless students (Ruoss et al. 2024) as agents: `av:`, `sv:`, `bc:` specs over distill/'s
players (`distill.policy.load_player`). AV/SV scores are win probabilities of the chosen move,
reported as a value (and so as centipawns over UCI); BC has no value.
"""
from __future__ import annotations

import time

import chess

from arena.agent import Agent, Limit


class SearchlessAgent(Agent):
    """One network call per move (AV: one per legal move, batched), no search."""

    def __init__(self, player, kind: str, name: str):
        self.player, self.kind, self.name = player, kind, name

    def select(self, board: chess.Board, limit: Limit | None = None, stop=None):
        start = time.perf_counter()
        move, extra = self.player.select(board.copy())
        info = {"nodes": 1, "pv": [move], "time": time.perf_counter() - start}
        score = extra.get("scores", {}).get(move.uci())
        if score is not None and self.kind in ("av", "sv"):
            info["value"] = 2.0 * min(max(float(score), 0.0), 1.0) - 1.0
        return move, info

    def close(self) -> None:
        close = getattr(self.player, "close", None)
        if close:
            close()


def make_searchless_agent(spec) -> Agent:
    """av:/sv:/bc: spec -> agent; a clear error if distill's player API is not installed."""
    try:
        from distill.policy import load_player
    except ImportError as e:
        raise ValueError(f"agent spec '{spec.text}': searchless players are not available "
                         f"(distill.policy: {e})") from None
    return SearchlessAgent(load_player(spec.kind, spec.get("ckpt")), spec.kind, spec.name)
