"""Where the Stockfish binary lies, and starting a UCI engine: the one place the project does both
(arena's engine agents, distill's annotation and the actors' sparring partner use them).

Stockfish comes from Debian's package at /usr/games/stockfish (not on PATH); `path=` or
$STOCKFISH_BIN overrides it.
"""
from __future__ import annotations

import os
import shutil

import chess.engine

from runtime.forking import forks_quietly

STOCKFISH_CANDIDATES = ("/usr/games/stockfish", "/usr/bin/stockfish", "/usr/local/bin/stockfish")


def find_stockfish(path: str | None = None) -> str:
    """The Stockfish binary: `path` if given (it must be there), else the first executable of
    $STOCKFISH_BIN, `stockfish` on PATH, /usr/games/stockfish (Debian), /usr/bin, /usr/local/bin."""
    candidates = (path,) if path else (os.environ.get("STOCKFISH_BIN"), shutil.which("stockfish"),
                                       *STOCKFISH_CANDIDATES)
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(
        f"Stockfish not found{f' at {path}' if path else ''}: "
        "install it with 'apt-get install -y stockfish' or set STOCKFISH_BIN")


def open_uci(command, timeout: float = 30) -> chess.engine.SimpleEngine:
    """Starts a UCI engine (python-chess): its fork execs the engine at once, so JAX's fork warning is
    silenced here (runtime/forking.py)."""
    with forks_quietly():
        return chess.engine.SimpleEngine.popen_uci(command, timeout=timeout)
