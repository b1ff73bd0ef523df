"""Searchless students (Ruoss et al. 2024) as agents: the `av:`, `sv:` and `bc:` specs.

    agent = make_agent("av:net=runs/distill/av/student")
    move, info = agent.select(board)          # info["scores"]: {uci: score} the move was chosen from
    moves, scores = agent.move_scores(board)  # the network's score of every legal move

`net=` is a student's network directory (models/network_dir.py; `distill.py train` writes one into
`<train.out_dir>/student/`), whose metadata names its target; the spec kind must match it.

AV  argmax over legal moves of the expected bin value of (board, move); an AV-all student (target
    av_all, also an `av:` agent) scores every legal move with one pass: sigmoid of its logit
SV  the move whose successor has the lowest expected value for the opponent (score = 1 - that);
    a successor that is mate scores 1, a drawn one 0.5
BC  the most probable legal move (score = log-probability renormalised over legal moves)
The paper's fixes: with `repetition_draw` (default on) a move that would complete a threefold
repetition scores 0.5 (AV/SV: a win probability); `repetition_count=2` scores 0.5 already for a
move back to any position of the game, as engines score a repetition inside their search (it changes
which draws a student makes, not its score); with `temperature` > 0 a move is sampled from
softmax(score / temperature), for the first `temperature_plies` plies of the game (default: all).
With `rules` (default on) an AV student scores a move that ends the game by the rules with the rules'
value (mate 1, draw 0.5), as the SV student's one-ply rule always does: on network scores alone a
student that wins material may still never mate. Measured: docs/experiments/2026-11-24-distill-students-cpu.md.
AV/SV report the chosen move's win probability p as the value 2p - 1 (so as centipawns over UCI);
BC has no value. JAX and the network load only when such an agent is built.
"""
from __future__ import annotations

import time
from typing import Optional

import chess
import numpy as np
from scipy.special import expit

from arena.agents.agent import Agent, Limit
from arena.agents.one_ply import one_ply_values, rules_values

TARGETS = ("av", "av_all", "sv", "bc")  # the `target` a student's network metadata records
SPEC_KIND = {"av": "av", "av_all": "av", "sv": "sv", "bc": "bc"}  # the agent spec kind of each target
BUCKETS = (8, 16, 32, 64, 128, 256)  # padded batch sizes: few jit compilations


def _pad(x: np.ndarray) -> np.ndarray:
    n = len(x)
    size = next((b for b in BUCKETS if b >= n), n)
    return np.concatenate([x, np.repeat(x[:1], size - n, 0)]) if size > n else x


def repeats_position(board: chess.Board, move: chess.Move, times: int) -> bool:
    """Whether playing `move` makes the resulting position occur for the `times`-th time (or more)."""
    board.push(move)
    try:
        return board.is_repetition(times)
    finally:
        board.pop()


def completes_threefold(board: chess.Board, move: chess.Move) -> bool:
    """Whether playing `move` makes the resulting position occur for the third time."""
    return repeats_position(board, move, 3)


class StudentAgent(Agent):
    """A trained student (its network directory, loaded) playing without search."""

    def __init__(self, network, target: str, name: str = "", temperature: float = 0.0,
                 temperature_plies: Optional[int] = None, repetition_draw: bool = True,
                 seed: int = 0, repetition_count: int = 3, rules: bool = True):
        """network: a models.network_dir.NetworkDir of a searchless or Chessformer student;
        target: "av", "av_all", "sv" or "bc" (what it was trained to predict)."""
        import jax
        import jax.numpy as jnp
        if target not in TARGETS:
            raise ValueError(f"unknown student target {target!r} (use av, av_all, sv or bc)")
        self.name = name or f"student-{target}"
        self.target, self.family = target, network.config.family
        self.temperature, self.temperature_plies = temperature, temperature_plies
        if repetition_count not in (2, 3):
            raise ValueError(f"repetition_count must be 2 or 3, got {repetition_count}")
        self.repetition_draw, self.repetition_count = repetition_draw, repetition_count
        self.rules = rules
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        module = network.module()
        variables = jax.tree_util.tree_map(jnp.asarray, network.variables)
        if self.family == "searchless":
            self._logprobs = jax.jit(lambda x: module.apply(variables, x))
        else:
            self._out = jax.jit(lambda x, b: module.apply(variables, x, is_black=b))

    def reset(self, game: int | None = None) -> None:
        if game is not None:
            self._rng = np.random.default_rng([self.seed, game])

    # -- the network ----------------------------------------------------------------------------

    def _searchless(self, tokens: np.ndarray) -> np.ndarray:
        """tokens [N, 77 | 78] -> log-probabilities [N, K | 1968]."""
        import jax.numpy as jnp
        n = len(tokens)
        return np.asarray(self._logprobs(jnp.asarray(_pad(tokens))))[:n]

    def _move_logits(self, board: chess.Board) -> np.ndarray:
        """[1968] the policy head's logits (BC: move log-odds; AV-all: win-probability logits)."""
        if self.family == "searchless":
            return self._searchless(self._tokens([board.fen()]))[0]
        return self._chessformer([board])[0][0]

    def _chessformer(self, boards: list[chess.Board]) -> tuple[np.ndarray, np.ndarray]:
        """boards [N] (with history) -> policy logits [N, 1968], win probabilities [N]."""
        import jax.numpy as jnp

        from games import square_encoding
        n = len(boards)
        squares = np.asarray(square_encoding.encode_boards(boards), np.float32)
        is_black = np.array([b.turn == chess.BLACK for b in boards])
        out = self._out(jnp.asarray(_pad(squares)), jnp.asarray(_pad(is_black)))
        return np.asarray(out.policy_logits)[:n], (np.asarray(out.value)[:n] + 1) / 2

    @staticmethod
    def _tokens(fens: list[str]) -> np.ndarray:
        from games import fen_tokens
        return np.asarray(fen_tokens.tokenize_batch(fens), np.int32)

    def _board_values(self, boards: list[chess.Board]) -> np.ndarray:
        """[N] expected win probability of each board for its side to move (SV)."""
        from games import winprob
        if self.family == "searchless":
            logprobs = self._searchless(self._tokens([b.fen() for b in boards]))
            return np.asarray(winprob.expected_bin_value(logprobs))
        return self._chessformer(boards)[1]

    def move_scores(self, board: chess.Board) -> tuple[list[chess.Move], np.ndarray]:
        """Every legal move and the network's score of it (AV/SV: win probability; BC:
        log-probability), before the repetition fix and temperature."""
        from games import uci_vocab, winprob
        moves = list(board.legal_moves)
        if not moves:
            raise ValueError(f"no legal move in {board.fen()}")
        ids = np.array([uci_vocab.move_to_index(m.uci()) for m in moves], np.int32)
        if self.target == "av":
            tokens = np.repeat(self._tokens([board.fen()]), len(moves), 0)
            logprobs = self._searchless(np.concatenate([tokens, ids[:, None]], 1))
            return moves, np.asarray(winprob.expected_bin_value(logprobs))
        if self.target == "av_all":
            return moves, expit(self._move_logits(board)[ids].astype(np.float64))
        if self.target == "bc":
            legal = self._move_logits(board)[ids]
            return moves, legal - np.logaddexp.reduce(legal)
        return moves, one_ply_values(board, moves, self._board_values)

    # -- the Agent interface --------------------------------------------------------------------

    def select(self, board: chess.Board, limit: Limit | None = None, stop=None):
        start = time.perf_counter()
        moves, scores = self.move_scores(board)
        scores = np.asarray(scores, np.float64).copy()
        if self.rules and self.target in ("av", "av_all"):
            by_rules = rules_values(board, moves)
            scores = np.where(np.isnan(by_rules), scores, by_rules)
        if self.repetition_draw and self.target != "bc":
            scores = np.array([0.5 if repeats_position(board, m, self.repetition_count) else s
                               for m, s in zip(moves, scores)])
        sampling = self.temperature > 0 and (self.temperature_plies is None
                                             or board.ply() < self.temperature_plies)
        if sampling:
            z = scores / self.temperature
            probs = np.exp(z - z.max())
            i = int(self._rng.choice(len(moves), p=probs / probs.sum()))
        else:
            i = int(np.argmax(scores))
        move = moves[i]
        info = {"nodes": 1, "pv": [move], "time": time.perf_counter() - start,
                "scores": {m.uci(): float(s) for m, s in zip(moves, scores)}}
        if self.target != "bc":
            info["value"] = 2.0 * min(max(float(scores[i]), 0.0), 1.0) - 1.0
        return move, info


def load_student(path: str, kind: str | None = None):
    """The student network directory at `path` (models.network_dir.NetworkDir) and its target;
    `kind` (av/sv/bc), if given, must be that target's spec kind (av for av_all)."""
    from models import network_dir
    network = network_dir.load(path)
    target = network.metadata.get("target")
    if network.game is not None or target not in TARGETS:
        raise ValueError(f"{path}: not a student network directory (its metadata names no "
                         "target av/av_all/sv/bc; self-play networks are mcts:/policy: agents)")
    if kind is not None and kind != SPEC_KIND[target]:
        raise ValueError(f"{path} holds a {target} student: play it as {SPEC_KIND[target]}:net=..., not {kind}:")
    return network, target


def make_student_agent(spec) -> StudentAgent:
    """av:/sv:/bc: spec -> agent."""
    network, target = load_student(spec.get("net"), spec.kind)
    return StudentAgent(network, target, spec.name, spec.get("temperature", 0.0),
                        spec.get("temperature_plies"), spec.get("repetition_draw", True),
                        spec.get("seed", 0), spec.get("repetition_count", 3),
                        spec.get("rules", True))
