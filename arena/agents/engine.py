"""External UCI engines as agents (Stockfish and any `uci:cmd="..."`) via python-chess; the binary
is found and the process started by runtime/engines.py.

An engine process that dies mid-move (killed, crashed) is restarted (same command and options) and
the move retried once; the engine is given the whole game each move, so the game goes on. If it
dies again on the same move, `select` raises EngineDiedError (the match scores the game as lost by
an error, with that message as the termination); the agent has a fresh engine for the next game.
"""
from __future__ import annotations

import os
import shlex
import shutil
import sys
import time

import chess
import chess.engine

from arena.agents.agent import Agent, Limit, Option
from runtime import find_stockfish, open_uci

DEFAULT_MOVETIME_MS = 100  # when a spec gives neither nodes, movetime nor depth


def _score_info(info: chess.engine.InfoDict, turn: chess.Color) -> dict:
    """Engine info -> our info keys (score from the side to move)."""
    out = {}
    score = info.get("score")
    if score is not None:
        pov = score.pov(turn)
        if pov.is_mate():
            out["mate"] = pov.mate()
            out["score_cp"] = pov.score(mate_score=100_000)
        else:
            out["score_cp"] = pov.score()
    for key in ("nodes", "depth"):
        if key in info:
            out[key] = info[key]
    if info.get("pv"):
        out["pv"] = list(info["pv"])
    return out


class EngineDiedError(RuntimeError):
    """The engine process died twice on the same move (restarted in between)."""


class EngineAgent(Agent):
    """A UCI engine process; `limit` defaults come from the spec (nodes / movetime ms / depth)."""

    def __init__(self, command: list[str], name: str, options: dict | None = None,
                 nodes: int | None = None, movetime_ms: int | None = None,
                 depth: int | None = None):
        self.name = name
        self._command = command
        self._options = dict(options or {})
        self.restarts = 0  # engine processes restarted after one died
        self._engine = self._start()
        if nodes is None and movetime_ms is None and depth is None:
            movetime_ms = DEFAULT_MOVETIME_MS
        self._game = object()
        self._default = chess.engine.Limit(
            nodes=nodes, time=None if movetime_ms is None else movetime_ms / 1000, depth=depth)

    def _start(self) -> chess.engine.SimpleEngine:
        command = self._command
        try:
            engine = open_uci(command)
        except FileNotFoundError:
            raise FileNotFoundError(f"engine '{command[0]}' not found") from None
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError, OSError,
                TimeoutError) as e:
            raise FileNotFoundError(f"engine '{shlex.join(command)}' did not start as a UCI "
                                    f"engine: {e}") from None
        if self._options:
            engine.configure(self._options)
        return engine

    def _restart(self) -> None:
        """A fresh engine process in place of a dead one (the same command and options)."""
        try:
            self._engine.close()
        except Exception:  # it is gone already
            pass
        self._engine = self._start()
        self.restarts += 1
        self._game = object()  # "ucinewgame" for the fresh process

    def pid(self) -> int:
        """The engine's process id."""
        return self._engine.protocol.transport.get_pid()

    @classmethod
    def from_spec(cls, spec) -> "EngineAgent":
        limits = dict(nodes=spec.get("nodes"), movetime_ms=spec.get("movetime"),
                      depth=spec.get("depth"))
        if spec.kind == "uci":
            command = shlex.split(spec.get("cmd"))
            if not command:
                raise ValueError(f"agent spec '{spec.text}': empty cmd")
            exe = command[0]
            if shutil.which(exe) is None and not os.path.isfile(exe):
                raise FileNotFoundError(f"agent spec '{spec.text}': engine '{exe}' not found")
            return cls(command, spec.name, **limits)
        options = {"Threads": spec.get("threads", 1), "Hash": spec.get("hash", 16)}
        if spec.get("skill") is not None:
            options["Skill Level"] = spec.get("skill")
        return cls([find_stockfish(spec.get("path"))], spec.name, options, **limits)

    def _limit(self, limit: Limit | None) -> chess.engine.Limit:
        if limit is None or (limit.nodes is None and limit.movetime is None and not limit.infinite):
            return self._default
        if limit.infinite:  # engines need a bound here; the UCI front end handles "infinite"
            return chess.engine.Limit(time=3600)
        return chess.engine.Limit(nodes=limit.nodes, time=limit.movetime)

    def select(self, board: chess.Board, limit: Limit | None = None, stop=None):
        start = time.perf_counter()
        for attempt in range(2):
            try:
                result = self._engine.play(board, self._limit(limit), info=chess.engine.INFO_ALL,
                                           game=self._game)
                break
            except chess.engine.EngineTerminatedError as e:
                print(f"{self.name}: engine died ({e}); restarted, "
                      + ("retrying the move" if attempt == 0 else "the move is reported as failed"),
                      file=sys.stderr)
                self._restart()
                if attempt:
                    raise EngineDiedError(f"engine {self.name} died twice on {board.fen()} ({e})") from None
        if result.move is None:
            raise ValueError(f"engine {self.name} returned no move for {board.fen()}")
        info = _score_info(result.info, board.turn)
        if info.get("pv", [result.move])[0] != result.move:  # Skill Level plays off its pv
            info["pv"] = [result.move]
        info["time"] = time.perf_counter() - start
        return result.move, info

    _FORWARDED = ("Threads", "Hash", "Skill Level")  # announced over UCI when the engine has them

    def options(self) -> list[Option]:
        out = []
        for name in self._FORWARDED:
            opt = self._engine.options.get(name)
            if opt is not None and opt.type == "spin":
                out.append(Option(opt.name, "spin", opt.default, opt.min, opt.max))
        return out

    def configure(self, name: str, value: str) -> None:
        """Forwards an option the engine itself announced (e.g. Threads, Hash)."""
        opt = self._engine.options.get(name)
        if opt is None or opt.is_managed():
            raise ValueError(f"option '{name}' is not supported by {self.name}")
        try:
            self._engine.configure({opt.name: opt.parse(value)})
        except (chess.engine.EngineError, ValueError) as e:
            raise ValueError(f"option '{name}': {e}") from None

    def reset(self, game: int | None = None) -> None:
        self._game = object()  # python-chess sends "ucinewgame" when `game` changes

    def close(self) -> None:
        try:
            self._engine.quit()
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError, TimeoutError):
            self._engine.close()
