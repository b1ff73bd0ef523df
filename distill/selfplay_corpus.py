"""Self-play corpora as distillation data (the frozen corpus of replay/corpus.py).

A frozen chess corpus already holds distill records (fen, moves, values = search Q as win
probability, value = root value, best = the move played, outcome, policy = visit distribution), so
`RecordStore(corpus_dir)` reads it directly: SV from `value` or `outcome` (data.sv_from), BC from
`best` or the visit distribution (data.bc_soft). For AV the search's Q is only meaningful for the
moves it visited; `complete_action_values` writes a new record directory where every unvisited move
(visit share 0) gets the teacher network's one-ply value instead: 1 - V_teacher(successor).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import chess
import numpy as np
from rich.progress import track

from arena import one_ply_values
from distill.records import ShardWriter, build_index, iter_records

Teacher = Callable[[Sequence[chess.Board]], np.ndarray]  # boards [N] -> win prob of side to move [N]


def complete_record(rec: dict, teacher: Teacher) -> dict:
    """`rec` with the values of its unvisited moves replaced by the teacher's one-ply values."""
    policy = rec.get("policy")
    if policy is None:
        raise ValueError(f"record {rec.get('game')}/{rec.get('ply')} has no visit distribution")
    board = chess.Board(rec["fen"])
    values = list(rec["values"])
    unvisited = [i for i, share in enumerate(policy) if share <= 0]
    scores = one_ply_values(board, [chess.Move.from_uci(rec["moves"][i]) for i in unvisited], teacher)
    for i, v in zip(unvisited, scores):
        values[i] = float(v)
    return {**rec, "values": values, "value_source": "search_q+teacher_one_ply"}


def complete_action_values(corpus_dir: str | Path, out_dir: str | Path, teacher: Teacher,
                           show_progress: bool = True) -> dict:
    """Writes the corpus's records with completed action values into `out_dir` (resumable by
    rerunning into a fresh directory; the frozen corpus itself is never written)."""
    if Path(out_dir).exists() and any(Path(out_dir).iterdir()):
        raise FileExistsError(f"{out_dir} is not empty: complete into a new directory")
    n = 0
    with ShardWriter(out_dir) as writer:
        for rec in track(iter_records(corpus_dir), "complete AV", disable=not show_progress):
            if "fen" not in rec:
                raise ValueError(f"{corpus_dir}: not a chess corpus (records have no 'fen')")
            writer.write(complete_record(rec, teacher))
            n += 1
    build_index(out_dir)
    return {"records": n, "out_dir": str(out_dir)}


def network_teacher(net_dir: str | Path, batch: int = 64) -> Teacher:
    """A teacher from a self-play network directory (models/network_dir.py, game "chess", e.g.
    runs/<name>/network): the value head on the pgx observation of each board (rebuilt from its
    FEN: no history planes)."""
    import jax
    import jax.numpy as jnp

    import models
    from games import chess_bridge

    network = models.load_evaluation(net_dir)
    if network.game != "chess":
        raise ValueError(f"{net_dir}: a teacher must be a chess self-play network (game: {network.game})")
    evaluate, variables = network.evaluate, network.variables
    apply = jax.jit(lambda obs: evaluate(variables, obs).value)

    def values(boards: Sequence[chess.Board]) -> np.ndarray:
        obs = np.asarray(chess_bridge.fens_to_states([b.fen() for b in boards]).observation)
        out = [np.asarray(apply(jnp.asarray(obs[i:i + batch]))) for i in range(0, len(obs), batch)]
        return (np.concatenate(out) + 1) / 2

    return values
