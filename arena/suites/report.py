"""Suite results: one `ItemResult` per position, a frozen `SuiteReport` with the aggregates
(overall, per rating band, per theme) and `render_table` for several agents side by side."""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Iterable, Sequence


@dataclasses.dataclass(frozen=True)
class ItemResult:
    """How the agent did on one puzzle / EPD position / annotated board."""

    id: str
    solved: bool
    played: tuple[str, ...]  # the agent's moves, UCI
    points: float | None = None  # STS: points of the played move
    max_points: float | None = None  # STS: the position's best points
    nodes: int = 0  # summed over the agent's moves (from its info)
    seconds: float = 0.0
    error: str | None = None  # e.g. an illegal move (counted as not solved)
    tau: float | None = None  # annotated boards: Kendall's tau of the agent's move scores


@dataclasses.dataclass(frozen=True)
class Group:
    """An aggregate: all positions, one rating band, or one theme."""

    name: str
    positions: int
    solved: int
    score: float | None = None  # STS points (sum)
    max_score: float | None = None

    @property
    def accuracy(self) -> float | None:
        return self.solved / self.positions if self.positions else None

    @property
    def score_fraction(self) -> float | None:
        return self.score / self.max_score if self.max_score else None

    def to_dict(self) -> dict:
        out = {"name": self.name, "positions": self.positions, "solved": self.solved,
               "accuracy": self.accuracy}
        if self.max_score is not None:
            out |= {"score": self.score, "max_score": self.max_score,
                    "score_fraction": self.score_fraction}
        return out


def group(name: str, results: Sequence[ItemResult]) -> Group:
    scored = [r for r in results if r.max_points is not None]
    return Group(name, len(results), sum(r.solved for r in results),
                 sum(r.points for r in scored) if scored else None,
                 sum(r.max_points for r in scored) if scored else None)


def group_by(results: Sequence[ItemResult], keys: Sequence[Iterable[str]],
             order: str = "count") -> tuple[Group, ...]:
    """Groups results by their keys (a result may have several, e.g. puzzle themes). `order`:
    "count" (most positions first, then name) or "band" (by the number a band name starts with)."""
    members: dict[str, list[ItemResult]] = {}
    for result, ks in zip(results, keys, strict=True):
        for k in dict.fromkeys(ks):
            members.setdefault(k, []).append(result)
    if order == "band":
        names = sorted(members, key=lambda k: int(k.split("-")[0].rstrip("+")))
    else:
        names = sorted(members, key=lambda k: (-len(members[k]), k))
    return tuple(group(k, members[k]) for k in names)


@dataclasses.dataclass(frozen=True)
class SuiteReport:
    """One agent on one suite. `kind`: puzzles, epd (bm/am), sts (bm/am and points) or actions
    (annotated boards: solved = action accuracy, plus Kendall's tau where the agent scores
    moves)."""

    agent: str  # display name (the spec's name= or the spec)
    spec: str
    suite: str  # the name as asked for
    path: str
    kind: str
    overall: Group
    bands: tuple[Group, ...] = ()  # puzzles: per rating band
    themes: tuple[Group, ...] = ()  # puzzles: Lichess themes; sts: the 15 STS themes
    kendall_tau: float | None = None
    tau_positions: int = 0
    errors: int = 0  # illegal moves
    nodes: int = 0
    seconds: float = 0.0  # wall time of the run
    move_limit: dict | None = None  # Limit as a dict; None: each agent's own default
    limit: int | None = None  # positions asked for (first N of the file)
    workers: int = 1
    stopped: str | None = None  # "interrupted" when cut short
    items: tuple[ItemResult, ...] = ()

    @property
    def positions(self) -> int:
        return self.overall.positions

    @property
    def accuracy(self) -> float | None:
        return self.overall.accuracy

    @property
    def score_fraction(self) -> float | None:
        return self.overall.score_fraction

    def to_dict(self, items: bool = True) -> dict[str, Any]:
        out = {"agent": self.agent, "spec": self.spec, "suite": self.suite, "path": self.path,
               "kind": self.kind, **self.overall.to_dict(),
               "bands": [g.to_dict() for g in self.bands],
               "themes": [g.to_dict() for g in self.themes]}
        del out["name"]
        if self.kind == "actions":
            out |= {"kendall_tau": self.kendall_tau, "tau_positions": self.tau_positions}
        out |= {"errors": self.errors, "nodes": self.nodes, "seconds": self.seconds,
                "move_limit": self.move_limit, "limit": self.limit, "workers": self.workers,
                "stopped": self.stopped}
        if items:
            out["items"] = [{k: v for k, v in dataclasses.asdict(r).items()
                             if v is not None or k in ("id", "solved")} for r in self.items]
        return out

    def to_json(self, items: bool = True, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(items), indent=indent)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _solved_cell(g: Group) -> str:
    return f"{_pct(g.accuracy)} ({g.solved}/{g.positions})"


def _score_cell(g: Group) -> str:
    return f"{_pct(g.score_fraction)} ({g.score:g}/{g.max_score:g})"


def table_rows(reports: Sequence[SuiteReport], puzzle_themes: int = 0
               ) -> tuple[list[str], list[tuple[str, str, dict[str, str]]]]:
    """(agent columns, [(suite, metric, {agent: cell})]) in first-seen order."""
    agents = list(dict.fromkeys(r.agent for r in reports))
    rows: dict[tuple[str, str], dict[str, str]] = {}

    def put(r: SuiteReport, metric: str, cell: str) -> None:
        rows.setdefault((r.suite, metric), {})[r.agent] = cell

    for r in reports:
        if r.kind == "sts":
            put(r, "STS score", _score_cell(r.overall))
        put(r, "action accuracy" if r.kind == "actions" else "solved", _solved_cell(r.overall))
        if r.kind == "actions":
            put(r, "Kendall tau", "-" if r.kendall_tau is None else f"{r.kendall_tau:.3f}")
        for g in r.bands:
            put(r, f"  rating {g.name}", _solved_cell(g))
        if r.kind == "sts":
            for g in r.themes:
                put(r, f"  {g.name}", _score_cell(g))
        elif r.kind == "puzzles":
            for g in r.themes[:puzzle_themes]:
                put(r, f"  theme {g.name}", _solved_cell(g))
        if r.errors:
            put(r, "illegal moves", str(r.errors))
        put(r, "seconds", f"{r.seconds:.1f}" + (" (interrupted)" if r.stopped else ""))
    return agents, [(s, m, cells) for (s, m), cells in rows.items()]


def render_table(reports: Sequence[SuiteReport], puzzle_themes: int = 0, title: str | None = None):
    """A rich Table: one row per suite metric (overall, bands, STS themes, the `puzzle_themes`
    most frequent puzzle themes), one column per agent."""
    from rich.table import Table

    agents, rows = table_rows(reports, puzzle_themes)
    table = Table(title=title)
    table.add_column("suite")
    table.add_column("metric")
    for a in agents:
        table.add_column(a, justify="right")
    last = None
    for suite, metric, cells in rows:
        if last is not None and suite != last:
            table.add_section()
        table.add_row(suite if suite != last else "", metric, *(cells.get(a, "") for a in agents))
        last = suite
    return table
