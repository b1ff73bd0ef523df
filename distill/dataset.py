"""Training examples from records: AV board-move pairs, SV boards, BC boards, as numpy batches.

    ex = load_examples(store, store.split("train", 0.05), "av")
    batch = sample_batch(ex, "av", rng, 256, family="searchless")

AV  one example per (board, legal move): tokens [77] + action id -> the move's win probability
SV  one example per board: tokens [77] -> the board's win probability (oracle/root value or outcome)
BC  one example per board: tokens [77] -> the move to imitate (oracle's best move / most visited),
    or with `bc_soft` the record's visit distribution over its moves.
The "unique" sampler draws boards uniformly; "weighted" by each record's `count` (occurrences).
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from distill import encoding

TARGETS = ("av", "sv", "bc")


@dataclasses.dataclass
class Examples:
    """Arrays of one split; N boards, P board-move pairs."""

    fens: list[str]  # [N]
    tokens: np.ndarray  # [N, 77] int32
    count: np.ndarray  # [N] occurrences (weighted sampler)
    value: np.ndarray  # [N] SV target win probability
    best: np.ndarray  # [N] BC target action id
    pair_board: np.ndarray  # [P] board of each legal move
    pair_action: np.ndarray  # [P] action id of each legal move
    pair_value: np.ndarray  # [P] AV target win probability
    pair_policy: np.ndarray  # [P] soft BC target (record policy, else one-hot on best)

    def __len__(self) -> int:
        return len(self.fens)


def best_move(rec: dict) -> str:
    """The move to imitate: the record's `best` (self-play) or the oracle's highest-valued move."""
    if rec.get("best"):
        return rec["best"]
    return rec["moves"][int(np.argmax(rec["values"]))]


def load_examples(store, indices: Sequence[int], sv_from: str = "value") -> Examples:
    """Reads the records `indices` of a RecordStore into arrays (all three targets)."""
    if sv_from not in ("value", "outcome"):
        raise ValueError(f"data.sv_from must be 'value' or 'outcome', got {sv_from!r}")
    fens, count, value, best = [], [], [], []
    pb, pa, pv, pp = [], [], [], []
    for n, i in enumerate(indices):
        rec = store[int(i)]
        if sv_from == "outcome" and "outcome" not in rec:
            raise ValueError(f"record {i} has no 'outcome' (Stockfish annotations: use sv_from=value)")
        fens.append(rec["fen"])
        count.append(rec.get("count", 1))
        value.append(rec["outcome"] if sv_from == "outcome" else rec["value"])
        b = best_move(rec)
        best.append(encoding.action_id(b))
        policy = rec.get("policy") or [1.0 if m == b else 0.0 for m in rec["moves"]]
        for move, v, p in zip(rec["moves"], rec["values"], policy):
            pb.append(n)
            pa.append(encoding.action_id(move))
            pv.append(v)
            pp.append(p)
    return Examples(fens, encoding.tokens(fens), np.array(count, np.float64),
                    np.array(value, np.float32), np.array(best, np.int32),
                    np.array(pb, np.int32), np.array(pa, np.int32), np.array(pv, np.float32),
                    np.array(pp, np.float32))


def _boards(ex: Examples, rng: np.random.Generator, n: int, sampler: str) -> np.ndarray:
    if sampler == "weighted":
        return rng.choice(len(ex), n, p=ex.count / ex.count.sum())
    if sampler != "unique":
        raise ValueError(f"unknown sampler {sampler!r} (use 'unique' or 'weighted')")
    return rng.integers(0, len(ex), n)


def sample_batch(ex: Examples, target: str, rng: np.random.Generator, batch_size: int,
                 family: str = "searchless", sampler: str = "unique", bc_soft: bool = False) -> dict:
    """A random batch: {"inputs": [B, 77|78] tokens or [B, 64, 112] squares, "is_black": [B],
    "value": [B] (AV/SV), "action": [B] (BC), "policy": [B, 1968] (BC soft)}."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r} (use one of {TARGETS})")
    if target == "av":
        if sampler == "weighted":
            w = ex.count[ex.pair_board]
            pairs = rng.choice(len(ex.pair_board), batch_size, p=w / w.sum())
        else:
            pairs = rng.integers(0, len(ex.pair_board), batch_size)
        boards = ex.pair_board[pairs]
        batch = {"inputs": np.concatenate([ex.tokens[boards], ex.pair_action[pairs, None]], 1),
                 "value": ex.pair_value[pairs]}
    else:
        boards = _boards(ex, rng, batch_size, sampler)
        batch = {"inputs": ex.tokens[boards]}
        if target == "sv":
            batch["value"] = ex.value[boards]
        else:
            batch["action"] = ex.best[boards]
            if bc_soft:
                batch["policy"] = soft_policy(ex, boards)
    if family == "chessformer":
        fens = [ex.fens[b] for b in boards]
        batch["inputs"] = encoding.squares(fens)  # FEN only: no history planes beyond the board
        batch["is_black"] = encoding.is_black(fens)
    return batch


def soft_policy(ex: Examples, boards: np.ndarray) -> np.ndarray:
    """[B, 1968] the records' policy over their moves for each board of `boards`."""
    out = np.zeros((len(boards), encoding.NUM_ACTIONS), np.float32)
    starts = np.searchsorted(ex.pair_board, boards, "left")
    ends = np.searchsorted(ex.pair_board, boards, "right")
    for row, (s, e) in enumerate(zip(starts, ends)):
        out[row, ex.pair_action[s:e]] = ex.pair_policy[s:e]
    return out / np.maximum(out.sum(1, keepdims=True), 1e-9)
