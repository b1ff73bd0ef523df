"""Annotate PGN boards with Stockfish: parallel engine workers, a progress bar, resumable output.

The main process owns the `ShardWriter`; workers (processes, one engine each) only analyse. On start
the FENs already in the output directory are skipped, so an interrupted run continues where it
stopped and never annotates a board twice.

A Stockfish process that dies mid-board (killed, crashed) is restarted and the board retried once;
a board it dies on twice is skipped and reported (`failed`, `failed_fens` in the result; a rerun
retries it). `engine_restarts` counts the restarts.
"""
from __future__ import annotations

import multiprocessing as mp
import sys
import time
from pathlib import Path
from typing import Iterable

import chess
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from distill import boards as boards_lib
from distill import engine as engine_lib
from distill.records import ShardWriter, build_index, iter_records
from runtime import find_stockfish, raise_if_stop_requested

_ENGINE = None
_ENGINE_PATH = ""
_LIMIT: dict = {}


def annotate_board(engine, gb: boards_lib.GameBoard, nodes_per_move: int = 0,
                   time_per_move: float = 0.0) -> dict:
    """One board -> one record (values for every legal move; state value = the best move's)."""
    board = chess.Board(gb.fen)
    values = engine_lib.move_values(engine, board, nodes_per_move, time_per_move)
    return {"fen": gb.fen, "game": gb.game, "ply": gb.ply, "moves": list(values),
            "values": list(values.values()), "value": max(values.values()), "count": gb.count,
            "source": "stockfish"}


def _worker_init(engine_path: str, nodes_per_move: int, time_per_move: float) -> None:
    global _ENGINE, _ENGINE_PATH, _LIMIT
    _ENGINE_PATH = engine_path
    _ENGINE = engine_lib.open_engine(engine_path)
    _LIMIT = {"nodes_per_move": nodes_per_move, "time_per_move": time_per_move}


def _worker_annotate(gb: boards_lib.GameBoard) -> tuple[boards_lib.GameBoard, dict | None, int, str]:
    """(board, record, engine restarts, error): the board annotated, retried once on a restarted
    engine if Stockfish died; record None (and why) if it died on it twice."""
    global _ENGINE
    restarts = 0
    for attempt in range(2):
        try:
            return gb, annotate_board(_ENGINE, gb, **_LIMIT), restarts, ""
        except chess.engine.EngineTerminatedError as e:
            error = f"{type(e).__name__}: {e}"
            print(f"annotate: Stockfish died on {gb.fen} ({error}); restarted"
                  + (", retrying the board" if attempt == 0 else ", the board is skipped"), file=sys.stderr)
            _close_engine()
            _ENGINE = engine_lib.open_engine(_ENGINE_PATH)
            restarts += 1
    return gb, None, restarts, error


PLAIN_EVERY = 1000  # new boards between plain progress lines (a few seconds to minutes of Stockfish)


def done_fens(out_dir: str | Path) -> set[str]:
    """FENs already annotated in `out_dir` (empty if it does not exist yet)."""
    if not Path(out_dir).is_dir():
        return set()
    return {rec["fen"] for rec in iter_records(out_dir)}


def annotate(boards: Iterable[boards_lib.GameBoard], out_dir: str | Path, *, engine_path: str = "",
             workers: int = 1, nodes_per_move: int = 0, time_per_move: float = 0.0,
             shard_size: int = 10_000, max_new: int | None = None, show_progress: bool = True
             ) -> dict:
    """Annotates the boards not yet in `out_dir`; returns {"new", "skipped", "seconds",
    "boards_per_minute", "engine_restarts", "failed", "failed_fens"}. `max_new` stops after that many
    new boards (tests: an interruption)."""
    engine_lib.board_limit(1, nodes_per_move, time_per_move)  # validate the limit up front
    engine_path = find_stockfish(engine_path or None)
    done = done_fens(out_dir)
    todo = [gb for gb in boards if gb.fen not in done]
    if max_new is not None:
        todo = todo[:max_new]
    skipped = len(done)
    start = time.time()
    new, restarts, failed = 0, 0, []
    columns = [TextColumn("annotate"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn(), TextColumn("{task.fields[rate]} boards/min")]
    init_args = (engine_path, nodes_per_move, time_per_move)
    plain = show_progress and not sys.stdout.isatty()  # a log file: a line every PLAIN_EVERY boards, no bar
    with ShardWriter(out_dir, shard_size) as writer, \
            Progress(*columns, disable=not show_progress or plain) as progress:
        task = progress.add_task("annotate", total=len(todo), rate="-")
        if workers <= 1:
            _worker_init(*init_args)
            results = map(_worker_annotate, todo)
            pool = None
        else:
            pool = mp.get_context("spawn").Pool(workers, _worker_init, init_args)
            results = pool.imap_unordered(_worker_annotate, todo, chunksize=4)
        try:
            for gb, rec, engine_restarts, _ in results:
                raise_if_stop_requested()  # a signal whose KeyboardInterrupt a gc callback swallowed
                restarts += engine_restarts
                if rec is None:
                    failed.append(gb.fen)
                    progress.update(task, advance=1)
                    continue
                writer.write(rec)
                new += 1
                rate = new / max(time.time() - start, 1e-9) * 60
                progress.update(task, advance=1, rate=f"{rate:.0f}")
                if plain and (new % PLAIN_EVERY == 0 or new == len(todo)):
                    print(f"annotate: {new}/{len(todo)} new boards ({skipped} done before), {rate:.0f} boards/min, "
                          f"{time.time() - start:.0f} s", flush=True)
        finally:
            if pool is not None:
                pool.terminate()
            _close_engine()
    build_index(out_dir)
    seconds = time.time() - start
    if failed:
        print(f"annotate: {len(failed)} board(s) skipped, Stockfish died twice on each (first: {failed[0]}); "
              "a rerun retries them", file=sys.stderr)
    return {"new": new, "skipped": skipped, "seconds": seconds,
            "boards_per_minute": new / max(seconds, 1e-9) * 60, "engine_restarts": restarts,
            "failed": len(failed), "failed_fens": failed}


def _close_engine() -> None:
    global _ENGINE
    if _ENGINE is not None:
        try:
            _ENGINE.quit()
        except Exception:  # the engine may already be gone after an interrupt
            pass
        _ENGINE = None
