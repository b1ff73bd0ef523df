"""Training examples from records: AV board-move pairs, SV boards, BC boards, as numpy batches.

    ex = load_examples(store, store.split("train", 0.05), "av")
    batch = sample_batch(ex, "av", rng, 256, family="searchless")

AV  one example per (board, legal move): tokens [77] + action id -> the move's win probability
AV-all  one example per board: tokens [77] -> every legal move's win probability ([1968] values
    and a legal-move mask), the same targets as AV from one forward pass
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

TARGETS = ("av", "av_all", "sv", "bc")


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
    _squares: np.ndarray | None = None  # [N, 64, 112] float16 Chessformer inputs (encode_squares)
    _is_black: np.ndarray | None = None  # [N] bool, black to move (encode_squares)

    def __len__(self) -> int:
        return len(self.fens)

    def encode_squares(self) -> None:
        """Encodes every board's Chessformer inputs once (FEN only: no history planes; python-chess
        per board, ~0.6 ms each), so batches afterwards are gathers. Does nothing the second time."""
        if self._squares is None:
            chunks = [encoding.squares(self.fens[i:i + 4096]).astype(np.float16)
                      for i in range(0, len(self.fens), 4096)]
            self._squares = np.concatenate(chunks) if chunks else np.zeros((0, 64, 112), np.float16)
            self._is_black = encoding.is_black(self.fens)

    def chessformer_inputs(self, boards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """([B, 64, 112] float32 squares, [B] bool black to move) of `boards`."""
        self.encode_squares()
        return self._squares[boards].astype(np.float32), self._is_black[boards]

    def pairs_of(self, boards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row, pair) index arrays of every legal move of `boards` [B]: row in [0, B), pair into
        the pair_* arrays (pairs are stored board by board, so each board's moves are one run)."""
        starts = np.searchsorted(self.pair_board, boards, "left")
        lengths = np.searchsorted(self.pair_board, boards, "right") - starts
        rows = np.repeat(np.arange(len(boards)), lengths)
        first = np.cumsum(lengths) - lengths  # where each board's run begins in the output
        return rows, np.repeat(starts - first, lengths) + np.arange(lengths.sum())


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
    "value": [B] (AV/SV), "action": [B] (BC), "policy": [B, 1968] (BC and AV-all with `bc_soft`),
    "move_values", "move_mask" and "value_mask" (the moves with a value): [B, 1968] (AV-all)}."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r} (use one of {TARGETS})")
    if target == "av":
        valued = np.flatnonzero(np.isfinite(ex.pair_value))  # a policy-only board's moves have no AV target
        if sampler == "weighted":
            w = ex.count[ex.pair_board[valued]]
            pairs = valued[rng.choice(len(valued), batch_size, p=w / w.sum())]
        else:
            pairs = valued[rng.integers(0, len(valued), batch_size)]
        boards = ex.pair_board[pairs]
        batch = {"inputs": np.concatenate([ex.tokens[boards], ex.pair_action[pairs, None]], 1),
                 "value": ex.pair_value[pairs]}
    else:
        boards = _boards(ex, rng, batch_size, sampler)
        batch = {"inputs": ex.tokens[boards]}
        if target == "sv":
            batch["value"] = ex.value[boards]
        elif target == "av_all":
            batch["move_values"], batch["move_mask"], batch["value_mask"] = move_values(ex, boards)
        else:
            batch["action"] = ex.best[boards]
        if bc_soft and target in ("bc", "av_all"):  # av_all: the best-move term's target
            batch["policy"] = soft_policy(ex, boards)
    if family == "chessformer":
        batch["inputs"], batch["is_black"] = ex.chessformer_inputs(boards)
    return batch


def soft_policy(ex: Examples, boards: np.ndarray) -> np.ndarray:
    """[B, 1968] the records' policy over their moves for each board of `boards`."""
    out = np.zeros((len(boards), encoding.NUM_ACTIONS), np.float32)
    rows, pairs = ex.pairs_of(boards)
    out[rows, ex.pair_action[pairs]] = ex.pair_policy[pairs]
    return out / np.maximum(out.sum(1, keepdims=True), 1e-9)


def move_values(ex: Examples, boards: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """([B, 1968] win probability of each legal move (0 where the record has none), [B, 1968] 1 at
    the legal moves, [B, 1968] 1 at the legal moves with a value) of `boards`."""
    values = np.zeros((len(boards), encoding.NUM_ACTIONS), np.float32)
    mask = np.zeros_like(values)
    rows, pairs = ex.pairs_of(boards)
    given = np.isfinite(ex.pair_value[pairs])
    values[rows, ex.pair_action[pairs]] = np.where(given, ex.pair_value[pairs], 0.0)
    mask[rows, ex.pair_action[pairs]] = 1.0
    valued = np.zeros_like(values)
    valued[rows, ex.pair_action[pairs]] = given
    return values, mask, valued
