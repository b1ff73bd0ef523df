"""A network's search as the policy label of the boards of any record directory.

    python -m distill.search_labels OUT --records tgames --teacher networks/chess_distilled_4x64 \\
        --boards 80000 --simulations 64

A teacher's raw-policy games (distill/teacher_games.py) reach many boards cheaply but label them with
the raw policy, which a same-size student can only copy; a self-play corpus labels boards with the
search, which plays better, but only the narrow set of boards the searched games reach. This labels
the wide boards with the strong label: each board of `--records` (a seeded random order, so a prefix
spans many games) is searched by the teacher as it plays (its recorded search, `SearchConfig.for_play`:
no root noise) with `--simulations`, and becomes one record of distill/records.py's format:
    policy  the search's policy target over the legal moves (PUCT: its visit distribution; a root
            the search proved has none: the move it plays)
    best    the move the search plays
    values  NaN: a policy-only record (BC, and AV-all's best-move term with data.bc_soft)
    value   the search's root value as a win probability for the side to move
    fen, game, ply, outcome  as in the input record (the split by game id stays the input's)
    source  "search"
Interrupted, the same command continues after the records on disk (they are written in that order).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import chess
import numpy as np

from distill.records import RecordStore, ShardWriter, build_index, iter_records, resume_job

if TYPE_CHECKING:  # the search (and JAX) loads only when a job runs
    from search import WinCheck

JOB_FILE = "search_labels.json"  # what the directory was made from: a rerun resumes only the same job


@dataclasses.dataclass(frozen=True)
class SearchLabels:
    """What a directory of search labels is made from (its JOB_FILE)."""

    records: str  # the record directory whose boards are searched
    teacher: str  # the chess network directory whose search labels them
    simulations: int = 64  # simulations per board (the teacher's recorded search otherwise)
    seed: int = 0  # the order the boards are taken in, and the search's keys
    win_check: WinCheck = "root"  # search.win_check: root (self-play's; tree costs ~2.3x on a CPU)


class _Searcher:
    """The teacher's play search over fixed batches of FENs (one compiled shape)."""

    def __init__(self, teacher: str, simulations: int, win_check: WinCheck, batch_size: int):
        import games
        import models
        import search as search_lib
        from arena import search_config
        network = models.load_evaluation(teacher)
        if network.game != "chess":
            raise ValueError(f"{teacher}: a network for '{network.game}', not chess")
        if network.config.history:
            raise ValueError(f"{teacher}: the network reads earlier positions (network.history), which a "
                             "record's FEN does not hold: label with a network trained with history false")
        keys = {"num_simulations": simulations, "win_check": win_check}
        cfg = search_config(network.metadata, keys, f"network directory {teacher}")
        self.fn = search_lib.make_search(games.make("chess"), network.evaluate, cfg)
        self.variables, self.batch_size = network.variables, batch_size

    def labels(self, fens: list[str], seed: int) -> list[tuple[np.ndarray, int, np.ndarray, float]]:
        """Per FEN (slot actions [W], played action, policy target [W], root value in [-1, 1])."""
        import jax

        from games import chess_bridge
        padded = fens + [fens[0]] * (self.batch_size - len(fens))
        states = chess_bridge.fens_to_states(padded)
        out = jax.device_get(self.fn(self.variables, states, jax.random.PRNGKey(seed)))
        return [(out.slot_actions[i], int(out.action[i]), out.policy_target[i], float(out.root_value[i]))
                for i in range(len(fens))]


def labelled(rec: dict, slot_actions: np.ndarray, action: int, target: np.ndarray, root_value: float) -> dict:
    """The search-labelled record of input record `rec` (see the module docstring)."""
    from games import chess_bridge
    board = chess.Board(rec["fen"])
    white = board.turn == chess.WHITE
    slot_of = {int(a): s for s, a in enumerate(slot_actions) if a >= 0}
    moves = list(board.legal_moves)
    actions = [chess_bridge.move_to_pgx_action(m, white) for m in moves]
    missing = [m.uci() for m, a in zip(moves, actions) if a not in slot_of]
    if missing or len(slot_of) != len(moves):
        raise ValueError(f"{rec['fen']}: the search's moves differ from the rules' (missing {missing})")
    policy = np.array([target[slot_of[a]] for a in actions], np.float64)
    best = moves[actions.index(action)]
    if not policy.sum() > 0:  # a proven root: the search plays its result without a distribution
        policy = np.array([float(m == best) for m in moves])
    out = {"fen": rec["fen"], "game": rec["game"], "ply": rec.get("ply", 0), "source": "search",
           "moves": [m.uci() for m in moves], "values": [float("nan")] * len(moves),
           "value": (root_value + 1) / 2, "policy": [float(p) for p in policy / policy.sum()], "best": best.uci()}
    if "outcome" in rec:
        out["outcome"] = rec["outcome"]
    return out


def generate(out_dir: str | Path, job: SearchLabels, boards: int, batch_size: int = 256,
             show_progress: bool = True, searcher: _Searcher | None = None) -> dict:
    """Labels boards until `out_dir` holds `boards` records (resuming what it holds); `searcher` one
    built for this job's teacher, simulations and win check (one compile for several calls)."""
    out_dir = Path(out_dir)
    earlier = resume_job(out_dir, dataclasses.asdict(job), JOB_FILE, "these search labels")
    done = sum(1 for _ in iter_records(out_dir)) if earlier else 0
    store = RecordStore(job.records)
    order = np.random.default_rng(job.seed).permutation(len(store))
    todo = order[done:boards]
    searcher = searcher or _Searcher(job.teacher, job.simulations, job.win_check, batch_size)
    batch_size = searcher.batch_size
    start, written = time.perf_counter(), 0
    with ShardWriter(out_dir) as writer:
        for first in range(0, len(todo), batch_size):
            recs = [store[int(i)] for i in todo[first:first + batch_size]]
            found = searcher.labels([r["fen"] for r in recs], job.seed * 1_000_003 + done + first)
            writer.write_many([labelled(r, *f) for r, f in zip(recs, found)])
            written += len(recs)
            if show_progress:
                rate = written / (time.perf_counter() - start)
                print(f"{done + written:,} / {min(boards, len(store)):,} boards, {rate:.1f} boards/s",
                      file=sys.stderr, flush=True)
    store.close()
    build_index(out_dir)
    return {"records": done + written, "resumed_after": done, "out_dir": str(out_dir),
            "boards_per_second": written / max(time.perf_counter() - start, 1e-9)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="record directory to write (a rerun of the same command resumes it)")
    parser.add_argument("--records", required=True, help="record directory whose boards are searched")
    parser.add_argument("--teacher", required=True, help="chess network directory whose search labels them")
    parser.add_argument("--boards", type=int, required=True, help="records to hold when done")
    parser.add_argument("--simulations", type=int, default=64, help="simulations per board (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="board order and search keys (default 0)")
    parser.add_argument("--batch-size", type=int, default=256, help="boards per batched search (default 256)")
    args = parser.parse_args(argv)
    if args.boards < 1 or args.simulations < 1 or args.batch_size < 1:
        parser.error("--boards, --simulations and --batch-size must be positive")
    job = SearchLabels(str(Path(args.records).resolve()), str(Path(args.teacher).resolve()), args.simulations, args.seed)
    try:
        summary = generate(args.out, job, args.boards, args.batch_size)
    except (FileExistsError, FileNotFoundError, ValueError) as e:
        print(f"search_labels: {e}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
