"""Runs a suite for any agent spec, positions in parallel processes, into a `SuiteReport`.

    report = run_suite("stockfish:nodes=200", "wac", limit=50, workers=2)
    print(report.to_json()); rich.print(render_table([report, other]))

Suite names (files under the data dir, $ZEROCHESS_DATA or ../shared/data, see runtime/data.py):
puzzles, puzzles-10k, wac, wac-original, ecm, bk, arasan, bt2630, eet, pet, sts, sts-sf15; or any
path (or data-dir file name) ending .csv (Lichess puzzles), .epd (bm/am, STS points) or .jsonl
(annotated boards `{"fen", "moves", "values"}`). `limit` takes the first N positions (STS: the
first N/15 of each theme, taken in turn, so a short run still covers every theme).
"""
from __future__ import annotations

import concurrent.futures as futures
import dataclasses
import multiprocessing
import os
import time
from pathlib import Path
from typing import Callable

from arena.agents.agent import Agent, Limit
from arena.suites.actions import ActionRecord, read_records, solve_action
from arena.suites.epd import EpdPosition, read_epd, solve_epd
from arena.suites.puzzles import Puzzle, rating_band, read_puzzles, solve_puzzle
from arena.suites.report import ItemResult, SuiteReport, group, group_by

SUITES = {
    "puzzles": "puzzles/lichess_puzzles_themed.csv",
    "puzzles-10k": "puzzles/lichess_puzzles_10k_untagged.csv",
    "wac": "epd/wac_revised_300.epd",
    "wac-original": "epd/wac_original_300.epd",
    "ecm": "epd/ecm_879.epd",
    "bk": "epd/bratko_kopec_24.epd",
    "arasan": "epd/arasan2024_200.epd",
    "bt2630": "epd/bt2630_30.epd",
    "eet": "epd/eet_endgames_100.epd",
    "pet": "epd/pet_pawn_endgames_48.epd",
    "sts": "epd/sts1-15_v3_original_1500.epd",
    "sts-sf15": "epd/sts1-15_v5_sf15_1500.epd",
}
_KINDS = {".csv": "puzzles", ".epd": "epd", ".jsonl": "actions"}

Item = Puzzle | EpdPosition | ActionRecord


@dataclasses.dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    kind: str  # puzzles, epd, sts, actions
    items: tuple[Item, ...]


def resolve_suite(suite: str | Path) -> tuple[str, Path]:
    """(display name, file) for a suite name or path; ValueError (one line) naming the fix."""
    from runtime import data_dir

    text = str(suite).strip()
    root = data_dir()
    if text.lower() in SUITES:
        path = root / SUITES[text.lower()]
        if not path.is_file():
            raise ValueError(f"suite '{text}': {path} not found; set ZEROCHESS_DATA to the data "
                             "folder or run 'bash scripts/download_data.sh'")
        return text.lower(), path
    candidates = [Path(text), root / text, *(root / sub / text for sub in ("puzzles", "epd"))]
    for path in candidates:
        if path.is_file():
            if path.suffix.lower() not in _KINDS:
                raise ValueError(f"suite '{text}': {path} is not a .csv (Lichess puzzles), .epd "
                                 "or .jsonl (annotated boards) file")
            return path.stem, path
    raise ValueError(f"suite '{text}': no such suite or file; use one of {', '.join(SUITES)} "
                     f"or a .csv/.epd/.jsonl path (data dir {root}, set ZEROCHESS_DATA)")


def load_suite(suite: str | Path, limit: int | None = None) -> Suite:
    """Reads the first `limit` positions of a suite."""
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1 or None, got {limit}")
    name, path = resolve_suite(suite)
    kind = _KINDS[path.suffix.lower()]
    if kind == "puzzles":
        items: list = read_puzzles(path, limit)
    elif kind == "actions":
        items = read_records(path, limit)
    else:
        items = read_epd(path)
        if any(p.points is not None for p in items):
            kind = "sts"
            items = _interleave_themes(items)
        items = items[:limit]
    if not items:
        raise ValueError(f"suite '{suite}': {path} has no usable positions")
    return Suite(name, path, kind, tuple(items))


def _interleave_themes(items: list[EpdPosition]) -> list[EpdPosition]:
    """STS01.001, STS02.001, ..., STS01.002, ...: so that a `limit` covers every theme."""
    by_theme: dict[str | None, list[EpdPosition]] = {}
    for p in items:
        by_theme.setdefault(p.theme, []).append(p)
    rank = {id(p): (k, t) for t, ps in enumerate(by_theme.values()) for k, p in enumerate(ps)}
    return sorted(items, key=lambda p: rank[id(p)])


def evaluate_item(agent: Agent, item: Item, move_limit: Limit | None = None) -> ItemResult:
    """One position of any suite kind."""
    if isinstance(item, Puzzle):
        return solve_puzzle(agent, item, move_limit)
    if isinstance(item, EpdPosition):
        return solve_epd(agent, item, move_limit)
    return solve_action(agent, item, move_limit)


def build_report(suite: Suite, results: dict[int, ItemResult], *, agent: str, spec: str,
                 seconds: float, move_limit: Limit | None, limit: int | None, workers: int,
                 stopped: str | None = None) -> SuiteReport:
    """Aggregates per-position results (by suite index; missing ones were not played)."""
    done = sorted(results)
    items = [suite.items[i] for i in done]
    res = [results[i] for i in done]
    bands: tuple = ()
    themes: tuple = ()
    if suite.kind == "puzzles":
        bands = group_by(res, [[rating_band(p.rating)] for p in items], order="band")
        themes = group_by(res, [p.themes for p in items])
    elif suite.kind == "sts":
        themes = group_by(res, [[p.theme] if p.theme else [] for p in items])
        themes = tuple(sorted(themes, key=lambda g: g.name))
    taus = [r.tau for r in res if r.tau is not None]
    return SuiteReport(
        agent=agent, spec=spec, suite=suite.name, path=str(suite.path), kind=suite.kind,
        overall=group("all", res), bands=bands, themes=themes,
        kendall_tau=sum(taus) / len(taus) if taus else None, tau_positions=len(taus),
        errors=sum(r.error is not None for r in res), nodes=sum(r.nodes for r in res),
        seconds=seconds, move_limit=None if move_limit is None else dataclasses.asdict(move_limit),
        limit=limit, workers=workers, stopped=stopped, items=tuple(res))


def evaluate_agent(agent: Agent, suite: str | Path | Suite, limit: int | None = None,
                   move_limit: Limit | None = None, progress: bool = False,
                   spec: str | None = None) -> SuiteReport:
    """Runs a suite in this process with a player you already have (not closed afterwards): an
    `Agent`, or any object with `name` and `select(board)` (distill's players)."""
    loaded = suite if isinstance(suite, Suite) else load_suite(suite, limit)
    name = getattr(agent, "name", type(agent).__name__)
    start, results, stopped = time.perf_counter(), {}, None
    with _bar(progress) as bar:
        task = bar.add_task(f"{name} {loaded.name}", total=len(loaded.items))
        try:
            for i, item in enumerate(loaded.items):
                results[i] = evaluate_item(agent, item, move_limit)
                _advance(bar, task, name, loaded.name, results)
        except KeyboardInterrupt:
            stopped = "interrupted"
    return build_report(loaded, results, agent=name, spec=spec or name,
                        seconds=time.perf_counter() - start, move_limit=move_limit, limit=limit,
                        workers=1, stopped=stopped)


def run_suite(agent_spec: str, suite: str | Path, limit: int | None = None, workers: int = 1,
              move_limit: Limit | None = None, progress: bool = True,
              on_item: Callable[[int, ItemResult], None] | None = None) -> SuiteReport:
    """Builds the agent of `agent_spec` (one per worker process) and runs the first `limit`
    positions of `suite`; `move_limit` applies to every move (None: the agent's own default)."""
    from arena.agents.spec import check_agent

    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    name = check_agent(agent_spec).name  # bad specs / missing engines fail here, not in a worker
    loaded = load_suite(suite, limit)
    workers = min(workers, len(loaded.items))
    start, results, stopped = time.perf_counter(), {}, None
    with _bar(progress) as bar:
        task = bar.add_task(f"{name} {loaded.name}", total=len(loaded.items))

        def finished(i: int, result: ItemResult) -> None:
            results[i] = result
            if on_item:
                on_item(i, result)
            _advance(bar, task, name, loaded.name, results)

        try:
            if workers == 1:
                try:
                    for i, item in enumerate(loaded.items):
                        finished(i, _worker_item(agent_spec, item, move_limit))
                finally:
                    _close_agents()
            else:
                context = multiprocessing.get_context("spawn")  # JAX and engines do not fork
                with futures.ProcessPoolExecutor(workers, mp_context=context,
                                                 initializer=_init_worker) as pool:
                    pending = {pool.submit(_worker_item, agent_spec, item, move_limit): i
                               for i, item in enumerate(loaded.items)}
                    try:
                        for future in futures.as_completed(pending):
                            finished(pending[future], future.result())
                    finally:
                        for future in pending:
                            future.cancel()
        except KeyboardInterrupt:
            stopped = "interrupted"
    return build_report(loaded, results, agent=name, spec=agent_spec,
                        seconds=time.perf_counter() - start, move_limit=move_limit, limit=limit,
                        workers=workers, stopped=stopped)


# ---- progress ---------------------------------------------------------------------------------

def _bar(enabled: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), disable=not enabled)


def _advance(bar, task, agent: str, suite: str, results: dict[int, ItemResult]) -> None:
    solved = sum(r.solved for r in results.values())
    bar.update(task, advance=1, description=f"{agent} {suite}: solved {solved}/{len(results)}")


# ---- worker side: one agent per process, built from the spec once -----------------------------

_AGENTS: dict[str, Agent] = {}


def _worker_item(spec: str, item: Item, move_limit: Limit | None) -> ItemResult:
    if spec not in _AGENTS:
        from arena.agents.spec import make_agent
        _AGENTS[spec] = make_agent(spec)
    return evaluate_item(_AGENTS[spec], item, move_limit)


def _close_agents() -> None:
    while _AGENTS:
        _, agent = _AGENTS.popitem()
        try:
            agent.close()
        except Exception:  # best effort: the process is ending
            pass


def _init_worker() -> None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        from runtime import enable_compilation_cache
        enable_compilation_cache()
    # pool workers leave through os._exit, which skips atexit; Finalize still runs
    multiprocessing.util.Finalize(None, _close_agents, exitpriority=10)
