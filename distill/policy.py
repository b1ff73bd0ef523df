"""Searchless players: a move for a python-chess Board from a student, or from a baseline.

    player = load_player("av", "runs/distill/av")          # or "sv", "bc", "student", "random", "stockfish"
    move, info = player.select(board)                       # info["scores"]: {uci: score}

AV  argmax over legal moves of the expected bin value of (board, move)
SV  the move whose successor has the lowest expected value for the opponent (score = 1 - that);
    a successor that is mate scores 1, a drawn one 0.5
BC  the most probable legal move (score = log-probability renormalised over legal moves)
The paper's fixes: a move that would complete a threefold repetition scores 0.5 (AV/SV: a win
probability); for the first `temperature_plies` plies a move is sampled from softmax(score / T).
"""
from __future__ import annotations

from pathlib import Path
from typing import Protocol

import chess
import jax
import jax.numpy as jnp
import numpy as np

from distill import encoding, engine as engine_lib
from distill.config import PolicyConfig
from distill.losses import expected_bin_value
from distill.one_ply import one_ply_values
from models import checkpoint as model_checkpoint

BUCKETS = (8, 16, 32, 64, 128, 256)  # padded batch sizes: few jit compilations
KINDS = ("av", "sv", "bc", "student", "random", "stockfish")


class Player(Protocol):
    name: str

    def move_scores(self, board: chess.Board) -> tuple[list[chess.Move], np.ndarray]: ...

    def select(self, board: chess.Board) -> tuple[chess.Move, dict]: ...


def _pad(x: np.ndarray) -> np.ndarray:
    n = len(x)
    size = next((b for b in BUCKETS if b >= n), n)
    return np.concatenate([x, np.repeat(x[:1], size - n, 0)]) if size > n else x


def _legal(board: chess.Board) -> list[chess.Move]:
    moves = list(board.legal_moves)
    if not moves:
        raise ValueError(f"no legal move in {board.fen()}")
    return moves


class _Chooser:
    """The move choice shared by all players: repetition fix, temperature, argmax."""

    value_scores = True  # scores are win probabilities (the repetition fix applies)

    def __init__(self, policy: PolicyConfig, seed: int = 0):
        self.policy = policy
        self.rng = np.random.default_rng(seed)

    def select(self, board: chess.Board) -> tuple[chess.Move, dict]:
        moves, scores = self.move_scores(board)
        scores = np.asarray(scores, np.float64).copy()
        if self.policy.repetition_draw and self.value_scores:
            scores = np.array([0.5 if completes_threefold(board, m) else s
                               for m, s in zip(moves, scores)])
        p = self.policy
        if p.temperature > 0 and board.ply() < p.temperature_plies:
            z = scores / p.temperature
            probs = np.exp(z - z.max())
            i = int(self.rng.choice(len(moves), p=probs / probs.sum()))
        else:
            i = int(np.argmax(scores))
        return moves[i], {"scores": {m.uci(): float(s) for m, s in zip(moves, scores)}}


def completes_threefold(board: chess.Board, move: chess.Move) -> bool:
    """Whether playing `move` makes the resulting position occur for the third time."""
    board.push(move)
    try:
        return board.is_repetition(3)
    finally:
        board.pop()


class StudentPlayer(_Chooser):
    """A trained student (models/checkpoint.py network + its target) as a player."""

    def __init__(self, ckpt: model_checkpoint.Checkpoint, target: str,
                 policy: PolicyConfig = PolicyConfig(), seed: int = 0):
        super().__init__(policy, seed)
        self.name, self.target, self.cfg = f"student-{target}", target, ckpt.config
        self.value_scores = target != "bc"
        module, variables = ckpt.module(), jax.tree_util.tree_map(jnp.asarray, ckpt.variables)
        if self.cfg.family == "searchless":
            self._logprobs = jax.jit(lambda x: module.apply(variables, x))
        else:
            self._out = jax.jit(lambda x, b: module.apply(variables, x, is_black=b))

    def _searchless(self, tokens: np.ndarray) -> np.ndarray:
        n = len(tokens)
        return np.asarray(self._logprobs(jnp.asarray(_pad(tokens))))[:n]

    def _chessformer(self, boards: list[chess.Board]):
        n = len(boards)
        out = self._out(jnp.asarray(_pad(encoding.squares(boards))),
                        jnp.asarray(_pad(encoding.is_black(boards))))
        return np.asarray(out.policy_logits)[:n], (np.asarray(out.value)[:n] + 1) / 2

    def _board_values(self, boards: list[chess.Board]) -> np.ndarray:
        """[N] expected win probability of each board for its side to move (SV)."""
        if self.cfg.family == "searchless":
            tokens = encoding.tokens([b.fen() for b in boards])
            return np.asarray(expected_bin_value(jnp.asarray(self._searchless(tokens))))
        return self._chessformer(boards)[1]

    def move_scores(self, board: chess.Board) -> tuple[list[chess.Move], np.ndarray]:
        moves = _legal(board)
        ids = encoding.action_ids([m.uci() for m in moves])
        fen = board.fen()
        if self.target == "av":
            tokens = np.repeat(encoding.tokens([fen]), len(moves), 0)
            logp = self._searchless(np.concatenate([tokens, ids[:, None]], 1))
            return moves, np.asarray(expected_bin_value(jnp.asarray(logp)))
        if self.target == "bc":
            if self.cfg.family == "searchless":
                logits = self._searchless(encoding.tokens([fen]))[0]
            else:
                logits = self._chessformer([board])[0][0]
            legal = logits[ids]
            return moves, legal - np.logaddexp.reduce(legal)
        return moves, self._successor_scores(board, moves)

    def _successor_scores(self, board: chess.Board, moves: list[chess.Move]) -> np.ndarray:
        return one_ply_values(board, moves, self._board_values)


class RandomPlayer(_Chooser):
    """Baseline: a uniformly random legal move (scores are random numbers)."""

    name = "random"

    def move_scores(self, board):
        moves = _legal(board)
        return moves, self.rng.random(len(moves))


class StockfishPlayer(_Chooser):
    """Baseline: Stockfish at the annotation limit, scoring every legal move (multipv)."""

    def __init__(self, nodes_per_move: int = 500, time_per_move: float = 0.0, engine: str = "",
                 policy: PolicyConfig = PolicyConfig(), seed: int = 0):
        super().__init__(policy, seed)
        self.name = f"stockfish-{nodes_per_move}n" if nodes_per_move else f"stockfish-{time_per_move}s"
        self.limit = {"nodes_per_move": nodes_per_move, "time_per_move": time_per_move}
        self.engine = engine_lib.open_engine(engine)

    def move_scores(self, board):
        values = engine_lib.move_values(self.engine, board, **self.limit)
        moves = _legal(board)
        return moves, np.array([values[m.uci()] for m in moves])

    def close(self) -> None:
        self.engine.quit()


def student_dir(path: str | Path) -> Path:
    """The student network directory of a training run dir (or the directory itself)."""
    path = Path(path)
    if (path / model_checkpoint.CONFIG_FILE).exists():
        return path
    if (path / "student" / model_checkpoint.CONFIG_FILE).exists():
        return path / "student"
    raise FileNotFoundError(f"no student checkpoint in {path} (expected {path}/student/"
                            f"{model_checkpoint.CONFIG_FILE}; run 'distill.py train' first)")


def load_player(kind: str, ckpt_dir: str | Path = "", policy: PolicyConfig = PolicyConfig(),
                seed: int = 0, **stockfish_limit) -> Player:
    """A player: kind "av" / "sv" / "bc" (must match the checkpoint's target) or "student" (any
    target) from `ckpt_dir`; "random"; "stockfish" (keywords nodes_per_move / time_per_move / engine)."""
    if kind not in KINDS:
        raise ValueError(f"unknown player kind {kind!r} (use one of {', '.join(KINDS)})")
    if kind == "random":
        return RandomPlayer(policy, seed)
    if kind == "stockfish":
        return StockfishPlayer(policy=policy, seed=seed, **stockfish_limit)
    ckpt = model_checkpoint.load(student_dir(ckpt_dir))
    target = ckpt.metadata.get("target")
    if target not in ("av", "sv", "bc"):
        raise ValueError(f"{ckpt_dir}: checkpoint metadata names no student target (av/sv/bc)")
    if kind != "student" and kind != target:
        raise ValueError(f"{ckpt_dir} holds a {target} student, not {kind}")
    return StudentPlayer(ckpt, target, policy, seed)
