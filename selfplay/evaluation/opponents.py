"""Who an evaluated network plays, and the games: a random mover, the run's previous
`previous_networks` evaluated networks and the engine ladder (`evaluation.engines`, else the game's:
games/ladders.py; chess: arena agent specs), from the same start positions with both colours
(arena/batched/gauntlet.py's batched games; chess: from the opening book). The network's raw policy plays
the fixed anchors (random and the ladder) too. Chess games go to eval/gauntlet.pgn.

    opponents = Opponents(game, cfg, search, apply, run_dir / "eval")
    played = opponents.play(500, variables, evaluated=[0, 250])   # [(GameResult, GauntletGame)]
    opponents.close()                                                    # stops the engines
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import jax

from arena import GameResult, append_pgn, gauntlet, ladder_opponents
from games import ladders
from models import network_dir
from selfplay.config import SelfPlayConfig
from selfplay.evaluation.store import RANDOM, is_run_player, network_name, policy_name

Played = list[tuple[GameResult, gauntlet.GauntletGame]]  # (rating game, game) pairs


def ladder(game: str, engines: Optional[tuple[str, ...]]) -> tuple[str, ...]:
    """The fixed opponents besides random and earlier networks (`engines`, else the game's ladder);
    ValueError names a bad spec."""
    return ladder_opponents(game, ladders.ladder(game), engines)


class Opponents:
    """The opponents of one run's networks and the games against them; engines start once."""

    def __init__(self, game, cfg: SelfPlayConfig, search, apply, eval_dir: Path):
        """search: the run's search as every player plays it; apply: the network's evaluation function;
        eval_dir: runs/<name>/eval (its networks/ and gauntlet.pgn)."""
        self.game, self.cfg, self.ecfg = game, cfg, cfg.evaluation
        self.search, self.apply, self.dir = search, apply, eval_dir
        self.ladder = ladders.ladder(cfg.game)  # FEN and UCI: books, engines, PGN
        self.key = jax.random.PRNGKey(cfg.seed + 7919)
        self._starts = None
        self._start_fens: list[str] = []
        self._engines: dict[str, Any] = {}

    def play(self, step: int, variables, evaluated: list[int]) -> Played:
        """The searched network of `step` against every opponent and its raw policy against the fixed
        anchors (random, the ladder), every start position with both colours. evaluated: the steps
        evaluated before (the latest of them play as earlier networks)."""
        opponents = self._opponents(evaluated)
        anchors = [(o, m) for o, m in opponents if not is_run_player(o)]
        return (self._play(network_name(step), gauntlet.search_mover(self.search, variables), opponents)
                + self._play(policy_name(step), gauntlet.policy_mover(self.apply, variables), anchors))

    def close(self) -> None:
        for agent in self._engines.values():
            if agent is not None:
                agent.close()
        self._engines.clear()

    def _next_key(self):
        self.key, key = jax.random.split(self.key)
        return key

    def _start_states(self):
        if self._starts is None:
            count = self.ecfg.openings
            if self.ladder.fen_uci:
                from arena import Book, book_path, pick
                boards = [o.board() for o in pick(Book(book_path(self.ecfg.book)), count, "random", self.cfg.seed)]
                self._start_fens = [b.fen() for b in boards for _ in (0, 1)]
                self._starts = gauntlet.start_states(self.game, count, None, boards=boards)
            else:
                self._starts = gauntlet.start_states(self.game, count, jax.random.PRNGKey(self.cfg.seed),
                                                     random_plies=self.ecfg.random_plies)
        return self._starts

    def _opponents(self, evaluated: list[int]) -> list[tuple[str, gauntlet.Mover]]:
        opponents: list[tuple[str, gauntlet.Mover]] = [(RANDOM, gauntlet.random_mover)]
        earlier = evaluated[-self.ecfg.previous_networks:] if self.ecfg.previous_networks else []
        for step in earlier:
            variables = network_dir.load(self.dir / "networks" / network_name(step)).variables
            opponents.append((network_name(step), gauntlet.search_mover(self.search, variables)))
        self._start_states()
        for spec in ladder(self.cfg.game, self.ecfg.engines):
            if not self.ladder.fen_uci:
                from arena import board_mover
                opponents.append((spec, board_mover(self.cfg.game, spec, self.cfg.seed + len(evaluated))))
                continue
            engine = self._engine(spec)
            if engine is not None:
                opponents.append((spec, gauntlet.AgentMover(engine, self._start_fens)))
        return opponents

    def _engine(self, spec: str):
        """The engine of a ladder spec, started once; None (with one warning) if it cannot start."""
        if spec not in self._engines:
            from arena import make_agent
            try:
                self._engines[spec] = make_agent(spec)
            except (FileNotFoundError, ValueError) as e:
                print(f"evaluation: engine '{spec}' left out of the ladder: {e}", file=sys.stderr, flush=True)
                self._engines[spec] = None
        return self._engines[spec]

    def _play(self, name: str, me: gauntlet.Mover, opponents) -> Played:
        starts = self._start_states()
        played = []
        for opponent, mover in opponents:
            for g in gauntlet.play_gauntlet(self.game, me, mover, starts, self._next_key(), self.ecfg.max_plies):
                white, black = (name, opponent) if g.network_first else (opponent, name)
                result = GameResult(white, black, g.score if g.network_first else 1 - g.score)
                played.append((result, g))
                if self.ladder.fen_uci:
                    self._write_pgn(result, g)
        return played

    def _write_pgn(self, result: GameResult, g: gauntlet.GauntletGame) -> None:
        from games import chess_bridge
        fen = self._start_fens[2 * g.start]
        score = {1.0: "1-0", 0.0: "0-1"}.get(result.score, "1/2-1/2")
        pgn = chess_bridge.actions_to_pgn(list(g.actions), fen=fen, result=score, headers={
            "Event": f"zerochess {self.cfg.name} evaluation", "White": result.white, "Black": result.black,
            "Termination": g.termination})
        append_pgn(self.dir / "gauntlet.pgn", pgn)
