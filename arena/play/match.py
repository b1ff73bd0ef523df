"""Matches: two agents (or a round robin) over an opening book, games in parallel, PGN + JSON out.

    cfg = MatchConfig(players=("stockfish:skill=0,nodes=1000", "random"), games=20,
                      book="../shared/data/openings/2moves_v1.epd", pgn_path="runs/m.pgn")
    summary = run_match(cfg)

Every opening is played twice per pairing, once with each colour (so `games` rounds up to an
even number), which also gives the pentanomial pairs for the Elo interval and the SPRT.
Games run in a process pool (`workers` > 1, spawn start: JAX and engines do not survive fork);
each worker builds its agents once and reuses them. Each finished game is appended to the PGN
file at once, so an interrupted match loses nothing that was played. The match holds a lock on its
PGN file while it plays: a second match given the same file stops in one line before its first game
(two matches appending to one PGN cannot be told apart afterwards).
"""
from __future__ import annotations

import concurrent.futures as futures
import contextlib
import dataclasses
import fcntl
import json
import math
import multiprocessing
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable, Literal, Optional

from arena.agents.agent import Agent, Limit
from arena.agents.spec import check_agent, make_agent
from arena.play.game import Adjudication, PlayedGame, append_pgn, play_game
from arena.play.openings import START, Book, Opening, pick
from arena.ratings.bayeselo import GameResult, fit_ratings
from arena.ratings.elo import elo_pentanomial, elo_wdl, pentanomial
from arena.ratings.sprt import SprtConfig, sprt_pentanomial
from configs import check_at_least, check_choices


@dataclasses.dataclass(frozen=True)
class MatchConfig:
    """One match or round robin (match.py loads it from YAML with --set overrides)."""

    players: tuple[str, ...]  # agent specs; 2 = a match, more = a round robin
    games: int = 10  # games per pairing (rounded up to even: each opening with both colours)
    book: Optional[str] = None  # opening book (.epd/.pgn/.tsv); None: the initial position
    order: Literal["random", "sequential"] = "random"  # how openings are picked from the book
    book_start: int = 0  # first book entry for sequential order
    seed: int = 0  # opening choice
    workers: int = 1  # parallel games (processes); 1 = in this process
    rules: Adjudication = Adjudication()  # ply cap, resign and draw adjudication
    nodes: Optional[int] = None  # per-move limit applied to every agent (None: each agent's own)
    movetime_ms: Optional[int] = None  # milliseconds per move for every agent (None: each agent's own)
    sprt: Optional[SprtConfig] = None  # stop a 2-player match when decided
    anchor: Optional[str] = None  # rating anchor (player name); default the first player
    pgn_path: Optional[str] = None  # append every game here
    json_path: Optional[str] = None  # results summary
    event: str = "zerochess match"  # PGN Event header

    def __post_init__(self):
        check_choices(self)
        if len(self.players) < 2:
            raise ValueError("a match needs at least two players")
        if self.sprt is not None and len(self.players) != 2:
            raise ValueError("SPRT needs exactly two players")
        check_at_least(self, 0, "book_start", "seed")
        for name in ("games", "workers", "nodes", "movetime_ms"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")

    def limit(self) -> Limit | None:
        """The per-move limit every agent gets (None: each its own default)."""
        if self.nodes is None and self.movetime_ms is None:
            return None
        return Limit(nodes=self.nodes,
                     movetime=None if self.movetime_ms is None else self.movetime_ms / 1000)


@dataclasses.dataclass(frozen=True)
class Task:
    """One game to play: which players, which colours, which opening."""

    round: int
    pairing: int  # index into the pairings list
    white: int  # player indices
    black: int
    white_spec: str
    black_spec: str
    opening: Opening


def player_names(specs) -> list[str]:
    """Display names (name= or the spec text), with '#2', '#3' added to repeats."""
    names, seen = [], defaultdict(int)
    for spec in specs:
        name = check_agent(spec).name
        seen[name] += 1
        names.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return names


def schedule(cfg: MatchConfig) -> tuple[list[tuple[int, int]], list[Task]]:
    """Pairings (i < j) and the games, interleaved so partial results cover every pairing."""
    n = len(cfg.players)
    pairings = [(i, j) for i in range(n) for j in range(i + 1, n)]
    pairs_per_pairing = math.ceil(cfg.games / 2)
    if cfg.book:
        book = Book(cfg.book)
        openings = pick(book, pairs_per_pairing, cfg.order, cfg.seed, cfg.book_start)
    else:
        openings = [START] * pairs_per_pairing
    tasks = []
    for k, opening in enumerate(openings):
        for p, (i, j) in enumerate(pairings):
            for white, black in ((i, j), (j, i)):
                tasks.append(Task(len(tasks) + 1, p, white, black, cfg.players[white],
                                  cfg.players[black], opening))
    return pairings, tasks


# ---- worker side: agents built once per process and reused --------------------------------

_AGENTS: dict[tuple[int, str], Agent] = {}


def _agent(player: int, spec: str) -> Agent:
    key = (player, spec)
    if key not in _AGENTS:
        _AGENTS[key] = make_agent(spec)
    return _AGENTS[key]


def close_agents() -> None:
    """Closes this process's cached agents (engines exit)."""
    while _AGENTS:
        _, agent = _AGENTS.popitem()
        try:
            agent.close()
        except Exception:  # closing is best effort; the process is ending
            pass


def _init_worker() -> None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):  # share compiled searches across workers
        from runtime import enable_compilation_cache
        enable_compilation_cache()
    # Pool workers leave through os._exit, which skips atexit; Finalize still runs.
    multiprocessing.util.Finalize(None, close_agents, exitpriority=10)


def play_task(task: Task, names: tuple[str, str], rules: Adjudication, limit: Limit | None,
              event: str) -> PlayedGame:
    """Plays one scheduled game with this process's agents."""
    return play_game(_agent(task.white, task.white_spec), _agent(task.black, task.black_spec),
                     task.opening, rules, limit, event, str(task.round), *names, game=task.round)


# ---- bookkeeping ------------------------------------------------------------------------------

class Standings:
    """Running results per pairing (from the first player's view) and the finished games."""

    def __init__(self, names: list[str], pairings: list[tuple[int, int]]):
        self.names, self.pairings = names, pairings
        self.wdl = [[0, 0, 0] for _ in pairings]
        self.pair_points: list[dict[int, list[float]]] = [defaultdict(list) for _ in pairings]
        self.games: list[tuple[Task, PlayedGame]] = []

    def add(self, task: Task, game: PlayedGame) -> None:
        self.games.append((task, game))
        i, _ = self.pairings[task.pairing]
        points = game.white_score if task.white == i else 1 - game.white_score
        self.wdl[task.pairing][{1.0: 0, 0.5: 1, 0.0: 2}[points]] += 1
        self.pair_points[task.pairing][(task.round - 1) // (2 * len(self.pairings))].append(points)

    def pentanomial(self, p: int) -> list[int]:
        return pentanomial([sum(v) for v in self.pair_points[p].values() if len(v) == 2])

    def pairing_summary(self, p: int, sprt: SprtConfig | None) -> dict:
        i, j = self.pairings[p]
        w, d, l = self.wdl[p]
        penta = self.pentanomial(p)
        out = {"player": self.names[i], "opponent": self.names[j], "wins": w, "draws": d,
               "losses": l, "score": (w + d / 2) / max(1, w + d + l),
               "elo": dataclasses.asdict(elo_wdl(w, d, l)), "pentanomial": penta,
               "elo_pentanomial": dataclasses.asdict(elo_pentanomial(penta))}
        if sprt is not None:
            out["sprt"] = {**dataclasses.asdict(sprt), **dataclasses.asdict(sprt_pentanomial(penta, sprt))}
        return out

    def progress_text(self) -> str:
        if len(self.pairings) == 1:
            w, d, l = self.wdl[0]
            est = elo_wdl(w, d, l)
            if not w + d + l:
                elo = ""
            elif math.isfinite(est.error):
                elo = f"Elo {est.elo:+.0f} +- {est.error:.0f}"
            else:
                elo = f"Elo {est.elo:+.0f} [{est.lower:+.0f}, {est.upper:+.0f}]"
            return f"{self.names[0]} vs {self.names[1]}: +{w} ={d} -{l} {elo}"
        points = defaultdict(float)
        for _, r in self.games:
            points[r.white] += r.white_score
            points[r.black] += 1 - r.white_score
        best = sorted(points.items(), key=lambda kv: -kv[1])[:3]
        return "leaders: " + ", ".join(f"{n} {p:g}" for n, p in best)


def _json_safe(x):
    """JSON has no infinities: +-inf (a 100% or 0% score) become the strings "inf" / "-inf"."""
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


def summarize(cfg: MatchConfig, standings: Standings, wall: float, stopped: str | None) -> dict:
    played = [g for _, g in standings.games]
    summary = {
        "players": standings.names, "specs": list(cfg.players),
        "config": {k: v for k, v in dataclasses.asdict(cfg).items() if k != "players"},
        "games_played": len(played), "stopped": stopped, "wall_seconds": wall,
        "seconds_per_game": wall / len(played) if played else None,
        "mean_game_seconds": sum(g.seconds for g in played) / len(played) if played else None,
        "pairings": [standings.pairing_summary(p, cfg.sprt if len(standings.pairings) == 1 else None)
                     for p in range(len(standings.pairings))],
        "games": [{k: v for k, v in dataclasses.asdict(r).items() if k != "pgn"} | {"round": t.round}
                  for t, r in sorted(standings.games, key=lambda tr: tr[0].round)],
    }
    if played:
        ratings = fit_ratings([GameResult(g.white, g.black, g.white_score) for g in played],
                              anchor=cfg.anchor or standings.names[0], players=standings.names)
        summary["ratings"] = {"anchor": ratings.anchor, "advantage": ratings.advantage,
                              "draw_elo": ratings.draw_elo, "table": ratings.table()}
    return _json_safe(summary)


# ---- the driver -------------------------------------------------------------------------------

def run_match(cfg: MatchConfig, on_game: Callable[[Standings, PlayedGame], None] | None = None,
              progress: bool = True) -> dict:
    """Plays the match and returns the summary (also written to cfg.json_path)."""
    names = player_names(cfg.players)
    pairings, tasks = schedule(cfg)
    standings = Standings(names, pairings)
    limit = cfg.limit()
    with _pgn_lock(cfg.pgn_path):
        return _play(cfg, names, pairings, tasks, standings, limit, on_game, progress)


@contextlib.contextmanager
def _pgn_lock(pgn_path: str | None):
    """The PGN file made (a path that cannot be written fails at once) and locked for the match; a
    match already writing it is a ValueError line. The kernel drops the lock when the process ends,
    so a killed match leaves none behind."""
    if not pgn_path:
        yield
        return
    Path(pgn_path).parent.mkdir(parents=True, exist_ok=True)
    with open(pgn_path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"{pgn_path} is being written by another match that is still playing: "
                             "give this one another --out (or wait for that one to end)") from None
        yield


def _play(cfg: MatchConfig, names: list[str], pairings: list[tuple[int, int]], tasks: list[Task],
          standings: Standings, limit: Limit | None,
          on_game: Callable[[Standings, PlayedGame], None] | None, progress: bool) -> dict:
    """Plays the scheduled games (in a process pool for workers > 1); writes and returns the summary."""
    start, stopped = time.perf_counter(), None

    def finished(task: Task, game: PlayedGame) -> bool:
        """Records a game; True when the SPRT has decided."""
        standings.add(task, game)
        if cfg.pgn_path:
            append_pgn(cfg.pgn_path, game.pgn)
        if on_game:
            on_game(standings, game)
        if cfg.sprt is not None:
            return sprt_pentanomial(standings.pentanomial(0), cfg.sprt).decision != "continue"
        return False

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    plain = progress and not sys.stdout.isatty()  # a log file: a line every tenth of the games, no bar
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), disable=not progress or plain, transient=False)
    every, done = max(1, len(tasks) // 10), 0
    try:
        with bar:
            bar_task = bar.add_task("starting", total=len(tasks))

            def update():
                nonlocal done
                done += 1
                bar.update(bar_task, advance=1, description=standings.progress_text())
                if plain and (done % every == 0 or done == len(tasks)):
                    print(f"match: {done}/{len(tasks)} games, {time.perf_counter() - start:.0f} s: "
                          f"{standings.progress_text()}", flush=True)

            args = lambda t: (t, (names[t.white], names[t.black]), cfg.rules, limit, cfg.event)  # noqa: E731
            if cfg.workers == 1:
                try:
                    for task in tasks:
                        decided = finished(task, play_task(*args(task)))
                        update()
                        if decided:
                            stopped = "sprt"
                            break
                finally:
                    close_agents()
            else:
                context = multiprocessing.get_context("spawn")
                with futures.ProcessPoolExecutor(cfg.workers, mp_context=context,
                                                 initializer=_init_worker) as pool:
                    pending = {pool.submit(play_task, *args(t)): t for t in tasks}
                    try:
                        for future in futures.as_completed(pending):
                            decided = finished(pending[future], future.result())
                            update()
                            if decided:
                                stopped = "sprt"
                                break
                    finally:
                        for future in pending:
                            future.cancel()
    except KeyboardInterrupt:
        stopped = "interrupted"
    summary = summarize(cfg, standings, time.perf_counter() - start, stopped)
    if cfg.json_path:
        Path(cfg.json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.json_path).write_text(json.dumps(summary, indent=2))
    return summary
