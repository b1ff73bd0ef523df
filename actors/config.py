"""Self-play actor settings: how many actors, games per actor, placement, resignation."""
from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal

from configs import Retired, check_at_least


@dataclasses.dataclass(frozen=True)
class ActorConfig:
    """Actors play `games_per_actor` games at once with one batched search per ply."""

    num_actors: int = 1  # self-play actors (Ray actors; spread over the cluster's nodes)
    games_per_actor: int = 32  # games each actor plays in parallel (the search batch)
    num_cpus: float = 1.0  # CPUs Ray reserves per actor
    num_gpus: float = 0.0  # GPUs per actor (>0 puts network and search on the accelerator)
    plies_per_call: int = 8  # plies an actor plays per call before reporting (games stream as they end)
    resign_threshold: float = -0.9  # resign when the root value and every move's Q are below this (AlphaZero -0.9)
    resign_min_plies: int = 0  # never resign before this ply
    resign_after_version: int = 0  # resign only with parameters of this learner step or later (an untrained value head is noise)
    resign_disabled_fraction: float = 0.1  # games that never resign, to measure resignation false positives
    # AlphaGo Zero's automatic threshold (actors/resignation.py): > 0 re-chooses the threshold after every
    # never-resign game, the highest at which at most this share of the players who would have resigned
    # did not lose (AlphaGo Zero: 0.05); resign_threshold is where it starts. 0: resign_threshold throughout
    resign_false_positive_target: float = 0.0
    resign_window_games: int = 500  # the never-resign games (each actor's latest) the threshold is chosen from
    resign_enabled: bool = True  # turn resignation off altogether
    max_restarts: int = 10  # Ray restarts an actor whose process died (kill -9, OOM) this many times; -1: always
    # Opening diversity: the first plies of every game are uniform random legal moves (both sides), so
    # the network also learns the positions a varied opening (a book, a gauntlet's random plies) reaches.
    # Each such position is still searched and its policy target trained; only the move played differs.
    random_opening_plies: int = 0
    # Chess: a book of move lines from the initial position (PGN or TSV, or a folder of them; a path, or a
    # name under the shared data's openings/, e.g. lichess_chess_openings: 3,807 ECO lines). Every game starts with a random line's
    # moves (searched, policy target kept), then `random_opening_plies` random plies. "": none.
    opening_book: str = ""
    # How much of its line a game plays: "whole" every book move; "random" a uniform number of the line's
    # first moves, from none to all but the last. With a book of whole games (a PGN of real games, e.g.
    # the shared data's games/lichess_user_export_3970.pgn) games then start at real positions, middle
    # games included, and every book move's position is still searched and its policy target kept.
    opening_book_prefix: Literal["whole", "random"] = "whole"
    # Chess: a game still going after this many plies ends, scored by material (games/material.py): the
    # side `adjudicate_margin` pawns or more ahead wins, otherwise a draw. 0: only the rules and the ply cap end games.
    adjudicate_plies: int = 0
    adjudicate_margin: float = 3.0  # pawns (1 / 3 / 3 / 5 / 9): 3 is a minor piece
    # Chess: this share of the games has Stockfish (actors/sparring.py) play one side, its colour drawn per
    # game, so the network also learns on the positions another opponent reaches. Every position is still
    # searched and recorded (on Stockfish's moves too: its policy target is the network's search); the
    # network's side plays its search's most visited move (no temperature), and no side resigns: the game is
    # played out as in a match, and its score is the progress line's "vs Stockfish". 0: self-play alone
    sparring_fraction: float = 0.0
    sparring_skill: int = 0  # the partner's Stockfish Skill Level (0-20; 0 is match.py's weakest anchor)
    sparring_depth: int = 1  # the partner's search depth a move
    # removed fields that saved configs still name (configs/loader.py): playout cap randomization
    RETIRED: ClassVar = {"full_search_fraction": Retired(1.0), "fast_simulations": Retired(8)}

    def __post_init__(self):
        if self.num_actors < 1 or self.games_per_actor < 1 or self.plies_per_call < 1:
            raise ValueError("num_actors, games_per_actor and plies_per_call must be >= 1")
        if not 0.0 <= self.resign_disabled_fraction <= 1.0:
            raise ValueError(f"resign_disabled_fraction must be in [0, 1], got {self.resign_disabled_fraction}")
        if self.num_cpus < 0 or self.num_gpus < 0:
            raise ValueError("num_cpus and num_gpus must be >= 0")
        if self.random_opening_plies < 0:
            raise ValueError(f"random_opening_plies must be >= 0, got {self.random_opening_plies}")
        check_at_least(self, 0, "resign_min_plies", "resign_after_version", "adjudicate_plies", prefix="actors.")
        if self.adjudicate_margin <= 0:
            raise ValueError(f"actors.adjudicate_margin must be > 0 (pawns), got {self.adjudicate_margin:g}")
        if not -1.0 <= self.resign_threshold <= 1.0:  # a value; below -1 never resigns, so say so instead
            raise ValueError(f"actors.resign_threshold must be in [-1, 1] (a root value; -1 never resigns), "
                             f"got {self.resign_threshold:g}")
        if not 0.0 <= self.resign_false_positive_target < 1.0:
            raise ValueError(f"actors.resign_false_positive_target must be in [0, 1) (0: a fixed threshold), "
                             f"got {self.resign_false_positive_target:g}")
        if self.resign_false_positive_target > 0 and not (self.resign_enabled and self.resign_disabled_fraction > 0):
            raise ValueError("actors.resign_false_positive_target is chosen from never-resign games: it needs "
                             "actors.resign_enabled=true and actors.resign_disabled_fraction > 0 (AlphaGo Zero: 0.1)")
        if self.resign_window_games < 1:
            raise ValueError(f"actors.resign_window_games must be >= 1, got {self.resign_window_games}")
        if not 0.0 <= self.sparring_fraction <= 1.0:
            raise ValueError(f"actors.sparring_fraction must be in [0, 1], got {self.sparring_fraction:g}")
        if not 0 <= self.sparring_skill <= 20:
            raise ValueError(f"actors.sparring_skill is Stockfish's Skill Level, 0-20, got {self.sparring_skill}")
        if self.sparring_depth < 1:
            raise ValueError(f"actors.sparring_depth must be >= 1, got {self.sparring_depth}")
        if self.max_restarts < -1:
            raise ValueError("max_restarts must be >= 0, or -1 for no limit")
