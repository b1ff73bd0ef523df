"""Self-play corpora as distillation data (the frozen corpus of replay/corpus.py).

A frozen chess corpus already holds distill records (fen, moves, values = search Q as win
probability, value = root value, best = the move played, outcome, policy = visit distribution), so
`RecordStore(corpus_dir)` reads it directly: SV from `value` or `outcome` (data.sv_from), BC from
`best` or the visit distribution (data.bc_soft). For AV the search's Q is only meaningful for the
moves it visited; `complete_action_values` writes a new record directory where every unvisited move
(visit share 0) gets the teacher network's one-ply value instead: 1 - V_teacher(successor), or with
`replies="captures"` the lowest of that and V_teacher after each capture the opponent has there
(arena's `capture_reply_values_many`: a move that hangs a piece is valued as hanging it). A completion
resumes: rerun the same command and it continues after the last record on disk.
"""
from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Callable, Literal, Sequence

import chess
import numpy as np
from rich.progress import track

from arena import capture_reply_values_many, one_ply_values_many
from distill.records import ShardWriter, build_index, iter_records, resume_job
from games import chess_bridge

Teacher = Callable[[Sequence[chess.Board]], np.ndarray]  # boards [N] -> win prob of side to move [N]
Replies = Literal["none", "captures"]  # the opponent's replies an unvisited move's value reads
MOVE_VALUES = {"none": one_ply_values_many, "captures": capture_reply_values_many}
SOURCE = {"none": "search_q+teacher_one_ply", "captures": "search_q+teacher_capture_reply"}
JOB_FILE = "completion.json"  # what a completion directory was made from: a rerun resumes only the same job


RECORDS_PER_CALL = 128  # records whose successors share one teacher call (~3,000 boards)


def complete_record(rec: dict, teacher: Teacher, replies: Replies = "none") -> dict:
    """`rec` with the values of its unvisited moves replaced by the teacher's values of them."""
    return complete_records([rec], teacher, replies)[0]


def complete_records(recs: Sequence[dict], teacher: Teacher, replies: Replies = "none") -> list[dict]:
    """`complete_record` of each, with one teacher call for all their unvisited moves' successors."""
    unvisited = []
    for rec in recs:
        if rec.get("policy") is None:
            raise ValueError(f"record {rec.get('game')}/{rec.get('ply')} has no visit distribution")
        unvisited.append([i for i, share in enumerate(rec["policy"]) if share <= 0])
    positions = [(chess_bridge.parse_fen(rec["fen"]), [chess.Move.from_uci(rec["moves"][i]) for i in rows])
                 for rec, rows in zip(recs, unvisited)]
    out = []
    for rec, rows, scores in zip(recs, unvisited, MOVE_VALUES[replies](positions, teacher)):
        values = list(rec["values"])
        for i, v in zip(rows, scores):
            values[i] = float(v)
        out.append({**rec, "values": values, "value_source": SOURCE[replies]})
    return out


def complete_action_values(corpus_dir: str | Path, out_dir: str | Path, teacher: Teacher,
                           show_progress: bool = True, replies: Replies = "none", teacher_name: str = "") -> dict:
    """Writes the corpus's records with completed action values into `out_dir` (the frozen corpus
    itself is never written). Interrupted, the same call continues after the last record on disk;
    a directory holding another job's records is refused."""
    if not any(Path(corpus_dir).glob("shard-*")):
        raise FileNotFoundError(f"{corpus_dir}: no corpus shards (freeze a run's: python -m replay.corpus runs/<name>)")
    if replies not in MOVE_VALUES:
        raise ValueError(f"replies {replies!r}: expected one of {', '.join(MOVE_VALUES)}")
    job = {"corpus": str(Path(corpus_dir).resolve()), "teacher": teacher_name, "replies": replies}
    done = _records_done(Path(out_dir), job)
    n, group = done, []
    with ShardWriter(out_dir) as writer:
        todo = itertools.islice(iter_records(corpus_dir), done, None)  # after the records on disk
        for rec in track(todo, "complete AV", disable=not show_progress):
            if "fen" not in rec:
                raise ValueError(f"{corpus_dir}: not a chess corpus (records have no 'fen')")
            group.append(rec)
            if len(group) == RECORDS_PER_CALL:
                n += _write(writer, complete_records(group, teacher, replies))
                group = []
        n += _write(writer, complete_records(group, teacher, replies)) if group else 0
    build_index(out_dir)
    return {"records": n, "resumed_after": done, "out_dir": str(out_dir)}


def _records_done(out_dir: Path, job: dict) -> int:
    """Records an earlier run of the same job left in `out_dir` (0 for a new directory, which gets the
    job's file); FileExistsError if it holds anything else."""
    what = f"this completion's ({job['replies']} replies of {job['corpus']})"
    if not resume_job(out_dir, job, JOB_FILE, what):
        return 0
    return sum(1 for _ in iter_records(out_dir))


def _write(writer: ShardWriter, recs: list[dict]) -> int:
    for rec in recs:
        writer.write(rec)
    return len(recs)


class NetworkTeacher:
    """A chess self-play network directory (models/network_dir.py, game "chess", e.g.
    runs/<name>/network) on python-chess boards: the pgx observation of each board (its position
    alone: no history planes; encoded straight from the board, games/chess_observation.py), in whole
    batches of `batch` (one compiled shape)."""

    def __init__(self, net_dir: str | Path, batch: int = 256):
        import jax

        import models
        network = models.load_evaluation(net_dir)
        if network.game != "chess":
            raise ValueError(f"{net_dir}: a teacher must be a chess self-play network (game: {network.game})")
        evaluate, variables = network.evaluate, network.variables
        self._apply = jax.jit(lambda obs: evaluate(variables, obs))
        self.batch = batch

    def outputs(self, boards: Sequence[chess.Board]) -> tuple[np.ndarray, np.ndarray]:
        """([N, 4672] policy logits, [N] value in [-1, 1] for each board's side to move)."""
        from games import chess_observation
        obs = chess_observation.boards_to_observations(boards)
        pad = -len(obs) % self.batch
        obs = np.concatenate([obs, np.repeat(obs[-1:], pad, axis=0)]) if pad else obs
        logits, values = [], []
        for i in range(0, len(obs), self.batch):
            out = self._apply(obs[i:i + self.batch])
            logits.append(np.asarray(out.policy_logits))
            values.append(np.asarray(out.value))
        return np.concatenate(logits)[:len(boards)], np.concatenate(values)[:len(boards)]

    def win_probabilities(self, boards: Sequence[chess.Board]) -> np.ndarray:
        """[N] the value head's win probability for each board's side to move (a Teacher)."""
        return (self.outputs(boards)[1] + 1) / 2


def network_teacher(net_dir: str | Path, batch: int = 256) -> Teacher:
    """A teacher from a self-play network directory: its value head (NetworkTeacher)."""
    return NetworkTeacher(net_dir, batch).win_probabilities


def main(argv: Sequence[str] | None = None) -> None:
    """python -m distill.selfplay_corpus CORPUS OUT --teacher NET: the AV-completed copy of a corpus."""
    import argparse
    import sys
    parser = argparse.ArgumentParser(description="A frozen self-play corpus with every unvisited move's value "
                                                 "from the teacher network (for AV students); rerun to resume.")
    parser.add_argument("corpus", help="a frozen corpus (python -m replay.corpus runs/<name>)")
    parser.add_argument("out", help="a new directory for the completed records (or an interrupted one's)")
    parser.add_argument("--teacher", required=True, help="a chess self-play network directory")
    parser.add_argument("--replies", choices=list(MOVE_VALUES), default="none",
                        help="captures: an unvisited move's value also reads the opponent's captures after it")
    args = parser.parse_args(argv)
    try:
        teacher = network_teacher(args.teacher)
        print(json.dumps(complete_action_values(args.corpus, args.out, teacher, replies=args.replies,
                                                teacher_name=str(Path(args.teacher).resolve()))))
    except (FileNotFoundError, FileExistsError, ValueError) as e:
        sys.exit(f"distill.selfplay_corpus: {e}")


if __name__ == "__main__":
    main()
