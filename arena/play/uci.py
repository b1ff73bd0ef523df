"""The UCI protocol in front of any Agent: `UciEngine(agent, write).handle(line)` per input line.

Supported: uci, isready, ucinewgame, setoption, position startpos|fen ... [moves ...],
go [movetime|nodes|wtime btime winc binc movestogo|infinite|depth], stop, quit (and debug,
ponderhit, register as no-ops). `go` searches in a thread so `stop` and `isready` are answered
meanwhile. Scores come from the agent's value through `winprob.cp_from_value`. Time manager
(AlphaZero): a move gets 1/20 of the remaining time (1/movestogo when fewer moves are left) plus
half the increment, never more than the remaining time minus a safety margin.
Malformed input gets `info string error: ...` and the engine keeps running.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

import chess

from arena.agents.agent import Agent, Limit
from games import winprob

ENGINE_NAME = "zerochess"
MOVE_OVERHEAD = 0.03  # seconds kept back from every time budget for I/O and the GUI
_GO_NUMBERS = ("wtime", "btime", "winc", "binc", "movestogo", "movetime", "nodes", "depth", "mate")
_GO_FLAGS = ("infinite", "ponder")


class UciError(ValueError):
    """Malformed or unsupported input; reported as `info string error: ...`."""


def time_budget(remaining_ms: int, increment_ms: int = 0, movestogo: int | None = None) -> float:
    """Seconds for one move from the clock of the side to move."""
    moves = min(20, movestogo) if movestogo else 20
    budget = remaining_ms / moves + increment_ms / 2
    return max(0.001, min(budget, remaining_ms - MOVE_OVERHEAD * 1000) / 1000)


def parse_go(tokens: list[str], turn: chess.Color) -> tuple[Limit, list[str]]:
    """`go` arguments -> (Limit, notes for the GUI). Raises UciError on malformed numbers."""
    values, flags, i = {}, set(), 0
    while i < len(tokens):
        tok = tokens[i]
        if tok in _GO_FLAGS:
            flags.add(tok)
            i += 1
        elif tok in _GO_NUMBERS:
            if i + 1 >= len(tokens):
                raise UciError(f"go: '{tok}' needs a number")
            try:
                values[tok] = int(tokens[i + 1])
            except ValueError:
                raise UciError(f"go: '{tok}' needs an integer, got '{tokens[i + 1]}'") from None
            if values[tok] < 0 and tok not in ("wtime", "btime"):
                raise UciError(f"go: '{tok}' must not be negative")
            i += 2
        elif tok == "searchmoves":
            raise UciError("go: searchmoves is not supported")
        else:
            raise UciError(f"go: unknown argument '{tok}'")
    notes = [f"{k} is not supported; using the default limit" for k in ("depth", "mate") if k in values]
    if "infinite" in flags or "ponder" in flags:
        return Limit(infinite=True), notes
    if "movetime" in values:
        return Limit(movetime=max(0.001, values["movetime"] / 1000 - MOVE_OVERHEAD),
                     nodes=values.get("nodes")), notes
    clock, inc = ("wtime", "winc") if turn == chess.WHITE else ("btime", "binc")
    if clock in values:
        return Limit(movetime=time_budget(values[clock], values.get(inc, 0), values.get("movestogo")),
                     nodes=values.get("nodes")), notes
    if "nodes" in values:
        return Limit(nodes=values["nodes"]), notes
    return Limit(), notes


def parse_position(tokens: list[str]) -> chess.Board:
    """`position` arguments -> the board with the moves on its stack. Raises UciError."""
    if not tokens:
        raise UciError("position: expected 'startpos' or 'fen'")
    moves_at = tokens.index("moves") if "moves" in tokens else len(tokens)
    head, moves = tokens[:moves_at], tokens[moves_at + 1:]
    if head[0] == "startpos" and len(head) == 1:
        board = chess.Board()
    elif head[0] == "fen" and 2 <= len(head) <= 7:
        try:
            board = chess.Board(" ".join(head[1:]))
        except ValueError as e:
            raise UciError(f"position: bad FEN '{' '.join(head[1:])}': {e}") from None
        if not board.is_valid():
            raise UciError(f"position: illegal position '{board.fen()}' ({board.status()!r})")
    else:
        raise UciError(f"position: expected 'startpos' or 'fen <FEN>', got '{' '.join(head)}'")
    for uci in moves:
        try:
            move = board.parse_uci(uci)
        except ValueError:
            raise UciError(f"position: illegal move '{uci}' in {board.fen()}") from None
        board.push(move)
    return board


def info_line(info: dict, elapsed: float) -> str:
    """Agent search info -> `info depth .. nodes .. nps .. time .. score cp .. pv ..`."""
    nodes = int(info.get("nodes", 1))
    pv = info.get("pv") or []
    parts = [f"depth {int(info.get('depth', max(1, len(pv))))}", f"nodes {nodes}",
             f"nps {int(nodes / max(elapsed, 1e-6))}", f"time {int(elapsed * 1000)}"]
    if "mate" in info:
        parts.append(f"score mate {int(info['mate'])}")
    elif "score_cp" in info:
        parts.append(f"score cp {int(info['score_cp'])}")
    elif "value" in info:
        parts.append(f"score cp {winprob.cp_from_value(info['value'])}")
    if pv:
        parts.append("pv " + " ".join(m.uci() for m in pv))
    return "info " + " ".join(parts)


class UciEngine:
    """Protocol state: the current position, options, and the search thread."""

    def __init__(self, agent: Agent, write: Callable[[str], None], name: str | None = None):
        self.agent = agent
        self.name = name or agent.name
        self._write_raw = write
        self._write_lock = threading.Lock()
        self.board = chess.Board()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def write(self, line: str) -> None:
        with self._write_lock:
            self._write_raw(line)

    def error(self, message: str) -> None:
        self.write(f"info string error: {message}")

    # -- commands ---------------------------------------------------------------------------

    def handle(self, line: str) -> bool:
        """Processes one input line; False after `quit`. Never raises on bad input."""
        tokens = line.split()
        if not tokens:
            return True
        command, args = tokens[0], tokens[1:]
        try:
            handler = getattr(self, f"_cmd_{command}", None) if command.isidentifier() else None
            if handler is None:
                raise UciError(f"unknown command '{command[:40]}'")
            return handler(args) is not False
        except UciError as e:
            self.error(str(e)[:300])
        except Exception as e:  # an agent failure must not take the engine down
            self.error(f"{command}: {type(e).__name__}: {e}"[:300])
        return True

    def _cmd_uci(self, args):
        self.write(f"id name {ENGINE_NAME} ({self.name})")
        self.write(f"id author {ENGINE_NAME} authors")
        for option in self.agent.options():
            self.write(option.uci())
        self.write("uciok")

    def _cmd_isready(self, args):
        self.write("readyok")

    def _cmd_debug(self, args):
        pass

    def _cmd_register(self, args):
        pass

    def _cmd_ponderhit(self, args):
        pass

    def _cmd_ucinewgame(self, args):
        self._finish_search()
        self.agent.reset()
        self.board = chess.Board()

    def _cmd_setoption(self, args):
        if not args or args[0] != "name" or len(args) < 2:
            raise UciError("setoption: expected 'setoption name <id> [value <x>]'")
        value_at = args.index("value") if "value" in args else len(args)
        name, value = " ".join(args[1:value_at]), " ".join(args[value_at + 1:])
        if not name:
            raise UciError("setoption: missing option name")
        self._finish_search()
        try:
            self.agent.configure(name, value)
        except ValueError as e:
            raise UciError(f"setoption: {e}") from None

    def _cmd_position(self, args):
        board = parse_position(args)
        self._finish_search()
        self.board = board

    def _cmd_go(self, args):
        limit, notes = parse_go(args, self.board.turn)
        self._finish_search()
        for note in notes:
            self.write(f"info string {note}")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._search, daemon=True,
                                        args=(self.board.copy(), limit, self._stop))
        self._thread.start()

    def _cmd_stop(self, args):
        self._finish_search()

    def _cmd_quit(self, args):
        self._finish_search()
        return False

    # -- search -----------------------------------------------------------------------------

    def _finish_search(self) -> None:
        """Stops a running search and waits for its bestmove."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None

    def _search(self, board: chess.Board, limit: Limit, stop: threading.Event) -> None:
        start = time.perf_counter()
        move = None
        if not any(board.legal_moves):
            self.write("info string no legal moves: the game is over")
        else:
            try:
                move, info = self.agent.select(board, limit, stop)
                if move not in board.legal_moves:
                    self.error(f"agent returned illegal move {move}")
                    move = None
                else:
                    self.write(info_line(info, time.perf_counter() - start))
            except Exception as e:  # answer bestmove anyway so the GUI is not left waiting
                self.error(f"search failed: {type(e).__name__}: {e}"[:300])
            if move is None:
                move = next(iter(board.legal_moves))
        if limit.infinite:  # UCI: under "go infinite" bestmove waits for "stop"
            stop.wait()
        self.write(f"bestmove {move.uci() if move else '(none)'}")

    def loop(self, lines) -> None:
        """Reads commands until `quit` or end of input."""
        try:
            for line in lines:
                if not self.handle(line):
                    return
        finally:
            self._finish_search()
