"""Stockfish as the oracle: the value of a board and of every legal move.

One search with multipv = number of legal moves scores every move (cheaper than one search per
move, and the moves are compared under the same search). The limit is per move:
`nodes_per_move * n` nodes or `time_per_move * n` seconds for a board with n legal moves.

`MultiPVEngine` speaks UCI over a pipe and parses only the last line Stockfish prints for each
move. python-chess's `analyse` parses every line of every iteration, replaying each PV on a board:
at the few hundred nodes per move an annotation uses, that took about three times Stockfish's own
CPU. Moves are still read and checked with python-chess, and scores become its `Score` types; the
values equal python-chess's `analyse` exactly (tests/test_annotate_engine.py).
"""
from __future__ import annotations

import subprocess

import chess
import chess.engine

from games import winprob
from runtime import find_stockfish


class MultiPVEngine:
    """One UCI engine process answering multipv searches (`scores`); a dead process raises
    `chess.engine.EngineTerminatedError`, as python-chess would."""

    def __init__(self, path: str = "", threads: int = 1, hash_mb: int = 16):
        from runtime import forks_quietly
        with forks_quietly():  # the fork execs the engine at once
            self._proc = subprocess.Popen([find_stockfish(path or None)], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, text=True, bufsize=1)
        self._send("uci")
        self._read_until("uciok")
        self._send(f"setoption name Threads value {threads}")
        self._send(f"setoption name Hash value {hash_mb}")

    @property
    def pid(self) -> int:
        return self._proc.pid

    def scores(self, board: chess.Board, multipv: int, limit: str) -> dict[str, chess.engine.Score]:
        """{uci: score for the side to move after it} of the `multipv` best moves, from a fresh
        search (hash cleared) under `limit`, a UCI `go` argument ("nodes 4000", "movetime 50")."""
        self._send(f"setoption name MultiPV value {multipv}")
        self._send("ucinewgame")
        self._send("isready")
        self._read_until("readyok")
        self._send(f"position fen {board.fen()}")
        self._send(f"go {limit}")
        last: dict[int, str] = {}  # multipv index -> its last info line
        while not (line := self._readline()).startswith("bestmove"):
            if line.startswith("info") and " multipv " in line and " pv " in line:
                last[int(line.split(" multipv ", 1)[1].split(None, 1)[0])] = line
        return dict(_parse_info(board, line) for line in last.values())

    def quit(self) -> None:
        if self._proc.poll() is None:
            try:
                self._send("quit")
                self._proc.wait(timeout=5)
            except (chess.engine.EngineTerminatedError, subprocess.TimeoutExpired):
                self._proc.kill()
        for stream in (self._proc.stdin, self._proc.stdout):
            try:
                stream.close()
            except OSError:  # a pipe to a killed process
                pass

    def _send(self, command: str) -> None:
        try:
            self._proc.stdin.write(command + "\n")
        except (BrokenPipeError, OSError):
            raise chess.engine.EngineTerminatedError(f"engine process died (exit code {self._proc.poll()})")

    def _readline(self) -> str:
        line = self._proc.stdout.readline()
        if not line:
            raise chess.engine.EngineTerminatedError(f"engine process died (exit code {self._proc.wait()})")
        return line.rstrip("\n")

    def _read_until(self, token: str) -> None:
        while self._readline().strip() != token:
            pass


def _parse_info(board: chess.Board, line: str) -> tuple[str, chess.engine.Score]:
    """('e2e4', Cp(31)) from 'info depth 9 ... multipv 3 score cp 31 ... pv e2e4 e7e5 ...'."""
    words = line.split()
    kind, amount = words[words.index("score") + 1: words.index("score") + 3]
    move = chess.Move.from_uci(words[words.index("pv") + 1])
    if move not in board.legal_moves:
        raise ValueError(f"engine answered {move.uci()}, not a legal move in {board.fen()}")
    score = chess.engine.Cp(int(amount)) if kind == "cp" else chess.engine.Mate(int(amount))
    return move.uci(), score


def open_engine(path: str = "", threads: int = 1, hash_mb: int = 16) -> MultiPVEngine:
    """Starts Stockfish (`path`, or wherever `runtime.find_stockfish` finds it)."""
    return MultiPVEngine(path, threads, hash_mb)


def board_limit(num_moves: int, nodes_per_move: int = 0, time_per_move: float = 0.0) -> str:
    """The UCI `go` limit for a board with `num_moves` legal moves (nodes take precedence)."""
    if nodes_per_move > 0:
        return f"nodes {nodes_per_move * num_moves}"
    if time_per_move > 0:
        return f"movetime {max(1, round(1000 * time_per_move * num_moves))}"
    raise ValueError("set nodes_per_move or time_per_move to a positive number")


def move_values(engine: MultiPVEngine, board: chess.Board, nodes_per_move: int = 0,
                time_per_move: float = 0.0) -> dict[str, float]:
    """{uci: win probability for the side to move after playing it} for EVERY legal move.

    A move the multipv search did not report (rare) is scored by its own search of the successor.
    """
    moves = list(board.legal_moves)
    if not moves:
        raise ValueError(f"board has no legal move: {board.fen()}")
    scores = engine.scores(board, len(moves), board_limit(len(moves), nodes_per_move, time_per_move))
    values = {uci: winprob.score_to_win_prob(score) for uci, score in scores.items()}
    for move in moves:
        if move.uci() not in values:
            board.push(move)
            if board.is_game_over(claim_draw=False):
                outcome = board.outcome()
                values[move.uci()] = 0.5 if outcome.winner is None else 1.0
            else:
                (score,) = engine.scores(board, 1, board_limit(1, nodes_per_move, time_per_move)).values()
                values[move.uci()] = 1.0 - winprob.score_to_win_prob(score)
            board.pop()
    return {m.uci(): values[m.uci()] for m in moves}
