"""EPD test suites: `bm` / `am` best- and avoid-move suites (WAC, ECM, Bratko-Kopec, Arasan,
BT2630, ...) and STS with its points.

A position is solved when the agent's move is one of `bm` (if given) and none of `am` (if given).
STS positions carry `c0 "Nf5=10, Ng4=3, ..."`: the move earns its points (0 if unlisted) out of
the position's maximum (10 in the original STS, 100 in the Stockfish-15 rescored v5); the theme
comes from the id, `STS(v3.0) Knight Outposts/Repositioning/Centralization.042` -> `STS03 ...`.
"""
from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import chess

from arena.agents.agent import Agent, Limit
from arena.suites.common import new_position, select
from arena.suites.report import ItemResult

_POINTS = re.compile(r"^\s*(\S+=\d+(\.\d+)?)(\s*,\s*\S+=\d+(\.\d+)?)*\s*,?\s*$")
_STS_ID = re.compile(r"^STS\(v(\d+)(?:\.\d+)?\)\s*(.*?)(?:\.\d+)?$")


@dataclasses.dataclass(frozen=True)
class EpdPosition:
    id: str
    fen: str
    bm: tuple[str, ...] = ()  # UCI
    am: tuple[str, ...] = ()  # UCI
    points: tuple[tuple[str, float], ...] | None = None  # STS: (UCI move, points)
    theme: str | None = None


def parse_points(board: chess.Board, text: str) -> tuple[tuple[str, float], ...] | None:
    """'Nf5=10, Ng4=3' -> (('e3f5', 10), ('e3g4', 3)) on `board`; None if `text` is not such a
    list (e.g. a game reference in c0). A bad SAN in a points list raises ValueError."""
    if not isinstance(text, str) or not _POINTS.match(text):
        return None
    out = []
    for pair in filter(None, (p.strip() for p in text.split(","))):
        san, _, value = pair.rpartition("=")
        out.append((board.parse_san(san).uci(), float(value)))
    return tuple(out)


def sts_themes(ids: list[str]) -> dict[str, str]:
    """id -> 'STS01 Undermine' (the first name seen for each STS number, as the files spell one
    theme two ways)."""
    names: dict[int, str] = {}
    out = {}
    for pid in ids:
        m = _STS_ID.match(pid)
        if m:
            n = int(m.group(1))
            names.setdefault(n, m.group(2).strip())
            out[pid] = f"STS{n:02d} {names[n]}"
    return out


def read_epd(path: str | Path, limit: int | None = None) -> list[EpdPosition]:
    """Positions with `bm`, `am` or STS points (others are skipped), the first `limit` of them."""
    path = Path(path)
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            board, ops = chess.Board.from_epd(line)
            points = parse_points(board, ops.get("c0"))
        except ValueError as e:
            raise ValueError(f"EPD file {path} line {n}: {e}") from None
        bm = tuple(m.uci() for m in ops.get("bm") or ())
        am = tuple(m.uci() for m in ops.get("am") or ())
        if not (bm or am or points):
            continue
        rows.append((str(ops.get("id") or f"{path.stem}.{n}"), board.fen(), bm, am, points))
        if limit is not None and len(rows) >= limit:
            break
    themes = sts_themes([r[0] for r in rows])
    return [EpdPosition(*r, theme=themes.get(r[0])) for r in rows]


def solve_epd(agent: Agent, position: EpdPosition, move_limit: Limit | None = None) -> ItemResult:
    """One move by `agent`: solved per bm/am, and its STS points where the position has them."""
    board = chess.Board(position.fen)
    new_position(agent)
    start = time.perf_counter()
    move, info = select(agent, board, move_limit)
    seconds = time.perf_counter() - start
    uci = move.uci()
    error = None if board.is_legal(move) else f"illegal move {uci}"
    solved = error is None and (not position.bm or uci in position.bm) and uci not in position.am
    points = max_points = None
    if position.points is not None:
        table = dict(position.points)
        points = table.get(uci, 0.0) if error is None else 0.0
        max_points = max(table.values())
    return ItemResult(position.id, solved, (uci,), points, max_points,
                      nodes=int(info.get("nodes") or 0), seconds=seconds, error=error)
