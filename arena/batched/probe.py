"""The probe set: real positions annotated once by Stockfish, and how far a network agrees with it.

    probe = ProbeSet.load()                                   # arena/data/probe.jsonl, 500 positions
    report = probe_network(probe, apply, variables, search)   # -> ProbeReport
    report.policy.agreement, report.search.regret, report.value.error, report.value.draw_error

Learning is visible here long before it shows in games: a raw network that plays far better than a
random mover still draws it at the ply cap, while the probe asks every position the same question.

The positions come from games of `games/lichess_100_games_with_evals.pgn` (human games, rated
~1500-2300), which no annotation source reads (distill/config.py), and none of their boards occurs in
the annotation sources (checked when the set is built). Each keeps its game's moves from the start,
so a network sees its history planes as in play. Each legal move carries Stockfish's win
probability for the side to move (one multipv search over every move, as distill/engine.py).

Per mover (the raw policy's greedy move, the search's move, a uniform random mover):
  agreement  share of positions where the move is Stockfish's best (a move of equal value counts,
             as in arena/suites/actions.py); 95% Wilson interval. A random mover's is exact:
             the mean of (best moves / legal moves).
  regret     mean win probability lost by the move against the best, in points of 100; 95% interval.
Value: mean absolute error of the network's win probability (v + 1) / 2 against Stockfish's, in
points of 100, beside the same error of always predicting a draw (50%); both with 95% intervals.

How many positions: a binomial agreement near 25% has a standard error of 1.9 points at 500
positions, so a 95% interval of +-3.8 points: enough to tell a network that agrees 5 points more
often than a random mover (~9%) from one that does not, and to see a rise of a few points between
evaluations. Twice as many would narrow it only by 30% at twice the search cost of every evaluation.
"""
from __future__ import annotations

import dataclasses
import json
import math
import random
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

PROBE_FILE = Path(__file__).resolve().parents[1] / "data" / "probe.jsonl"  # arena/data/
PROBE_PGN = "games/lichess_100_games_with_evals.pgn"  # relative to the data dir
TIE = 1e-9  # values this close to the best count as the best move


@dataclasses.dataclass(frozen=True)
class ProbePosition:
    """One annotated position and the game moves that led to it."""

    id: str  # "<game id>@<ply>"
    fen: str  # the position
    moves: tuple[str, ...]  # every legal move, UCI
    values: tuple[float, ...]  # Stockfish's win probability for the side to move after each move
    start_fen: str  # the game's start position
    history: tuple[str, ...]  # UCI moves from start_fen to fen

    @property
    def value(self) -> float:
        """Stockfish's win probability of the position for the side to move (its best move's)."""
        return max(self.values)

    def board(self):
        """The position as its game reached it: a chess.Board with the history on its move stack."""
        from arena.play.openings import Opening
        return Opening(self.start_fen, self.history).board()

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))


@dataclasses.dataclass(frozen=True)
class MoveScore:
    """How a mover's moves compare with Stockfish's on the probe set (rates in [0, 1], regret in
    points of 100)."""

    agreement: float
    agreement_lower: float
    agreement_upper: float
    regret: float
    regret_lower: float
    regret_upper: float


@dataclasses.dataclass(frozen=True)
class ValueScore:
    """Mean absolute error of the value head's win probability, and of a constant draw, in points
    of 100 against Stockfish's."""

    error: float
    error_lower: float
    error_upper: float
    draw_error: float
    draw_error_lower: float
    draw_error_upper: float


@dataclasses.dataclass(frozen=True)
class ProbeReport:
    positions: int
    policy: MoveScore  # the raw policy's greedy move
    search: Optional[MoveScore]  # the search's move (None when no search was given)
    value: ValueScore
    random: MoveScore  # a uniform random mover's expectation (exact, so its interval is a point)

    def line(self) -> str:
        """One line for a progress log."""
        s = f"probe: policy {100 * self.policy.agreement:.1f}%"
        if self.search is not None:
            s += f", search {100 * self.search.agreement:.1f}%"
        return (s + f" agree (random {100 * self.random.agreement:.1f}%, +-"
                f"{50 * (self.policy.agreement_upper - self.policy.agreement_lower):.1f}); value error "
                f"{self.value.error:.1f} (draw {self.value.draw_error:.1f})")


# -- statistics --------------------------------------------------------------------------------
def wilson(hits: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a binomial rate."""
    if n == 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # exact at the ends (none or all hit), where rounding would leave the rate a hair outside its interval
    return (0.0 if hits <= 0 else max(0.0, centre - half)), (1.0 if hits >= n else min(1.0, centre + half))


def mean_interval(x: np.ndarray, z: float = 1.96) -> tuple[float, float, float]:
    """(mean, lower, upper): the normal 95% interval of a mean."""
    x = np.asarray(x, np.float64)
    m = float(x.mean())
    half = z * float(x.std(ddof=1)) / math.sqrt(len(x)) if len(x) > 1 else 0.0
    return m, m - half, m + half


# -- the set -----------------------------------------------------------------------------------
def read_probe(path: str | Path = PROBE_FILE) -> list[ProbePosition]:
    """The positions of a probe file (JSON lines); ValueError (one line) naming a bad line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"probe set {path} not found; build it with 'python scripts/build_probe.py'")
    out = []
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            p = ProbePosition(d["id"], d["fen"], tuple(d["moves"]), tuple(float(v) for v in d["values"]),
                              d["start_fen"], tuple(d["history"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"probe set {path} line {n}: bad position ({e})") from None
        if not p.moves or len(p.moves) != len(p.values):
            raise ValueError(f"probe set {path} line {n}: moves and values must be non-empty and of equal length")
        out.append(p)
    return out


class ProbeSet:
    """Probe positions as pgx states with their histories, and the reference values per pgx action."""

    def __init__(self, positions: Sequence[ProbePosition]):
        import chess

        from games import chess_bridge

        if not positions:
            raise ValueError("a probe set needs at least one position")
        self.positions = list(positions)
        n = len(self.positions)
        width = max(len(p.moves) for p in self.positions)
        self.actions = np.full((n, width), -1, np.int32)  # [N, W] pgx ids of the legal moves
        self.values = np.full((n, width), -np.inf, np.float64)  # [N, W] Stockfish win prob per move
        starts, histories = [], np.full((n, max(len(p.history) for p in self.positions) or 1), -1, np.int32)
        for i, p in enumerate(self.positions):
            board = chess.Board(p.start_fen)
            for ply, uci in enumerate(p.history):
                histories[i, ply] = chess_bridge.move_to_pgx_action(chess.Move.from_uci(uci), board.turn == chess.WHITE)
                board.push_uci(uci)
            if board.fen() != p.fen:
                raise ValueError(f"probe position {p.id}: its history leads to {board.fen()}, not {p.fen}")
            self.actions[i, :len(p.moves)] = chess_bridge.ucis_to_pgx_actions(p.moves, board.turn == chess.WHITE)
            self.values[i, :len(p.moves)] = p.values
            starts.append(p.start_fen)
        self.best = self.values.max(axis=1)  # [N] the position's value for the side to move
        distinct = sorted(set(starts))  # games from the usual start share one state
        first = _stack([chess_bridge.fen_to_state(fen) for fen in distinct])
        rows = np.array([distinct.index(fen) for fen in starts])
        self.states = _replay(_take(first, rows), histories)  # pgx's own histories, as in a game

    @classmethod
    def load(cls, path: str | Path = PROBE_FILE, limit: Optional[int] = None) -> ProbeSet:
        positions = read_probe(path)
        return cls(positions[:limit] if limit else positions)

    def __len__(self) -> int:
        return len(self.positions)

    def score(self, actions: np.ndarray) -> MoveScore:
        """The moves `actions` [N] (pgx ids, one per position) against Stockfish's."""
        actions = np.asarray(actions).reshape(-1, 1)
        hit = self.actions == actions  # [N, W]
        if not hit.any(axis=1).all():
            bad = int(np.argmin(hit.any(axis=1)))
            raise ValueError(f"probe position {self.positions[bad].id}: action {int(actions[bad, 0])} is not legal")
        chosen = np.where(hit, self.values, -np.inf).max(axis=1)
        regret = 100 * (self.best - chosen)
        agree = regret <= 100 * TIE
        return _move_score(agree.sum(), len(agree), regret)

    def random_score(self) -> MoveScore:
        """A uniform random mover's expected agreement and regret (exact)."""
        legal = self.actions >= 0
        count = legal.sum(axis=1)
        best = (self.values >= self.best[:, None] - TIE) & legal
        agree = best.sum(axis=1) / count
        regret = 100 * np.where(legal, self.best[:, None] - self.values, 0.0).sum(axis=1) / count
        p = float(agree.mean())
        m = float(regret.mean())
        return MoveScore(p, p, p, m, m, m)

    def value_score(self, value: np.ndarray) -> ValueScore:
        """Network values `value` [N] in [-1, 1] for the side to move against Stockfish's."""
        win = (np.asarray(value, np.float64).reshape(-1) + 1) / 2
        error = mean_interval(100 * np.abs(win - self.best))
        draw = mean_interval(100 * np.abs(0.5 - self.best))
        return ValueScore(*error, *draw)


def _move_score(hits: int, n: int, regret: np.ndarray) -> MoveScore:
    return MoveScore(float(hits / n), *wilson(float(hits), n), *mean_interval(regret))


def _replay(states, actions: np.ndarray):
    """Batched pgx states after each row of `actions` [B, T] (-1: that game has stopped): every
    game stepped at once, one jitted call per ply."""
    import jax
    import jax.numpy as jnp

    from games import make
    env = make("chess")

    @jax.jit
    def step(states, action):
        moved = env.step(states, jnp.maximum(action, 0))
        keep = action >= 0
        return jax.tree.map(lambda new, old: jnp.where(keep.reshape((-1,) + (1,) * (new.ndim - 1)), new, old),
                            moved, states)

    for ply in range(actions.shape[1]):
        states = step(states, jnp.asarray(actions[:, ply]))
    return states


def _stack(states: list):
    import jax
    return jax.tree.map(lambda *x: np.stack(x), *states)


def _take(states, rows: np.ndarray):
    import jax
    return jax.tree.map(lambda x: np.asarray(x)[rows], states)


# -- measuring a network -----------------------------------------------------------------------
BatchMover = Callable[[Any, Any], np.ndarray]  # (states [B], key) -> pgx actions [B]


def batches(probe: ProbeSet, batch_size: int) -> Iterable[tuple[np.ndarray, Any]]:
    """(rows, states) chunks of `batch_size` (the last one padded with its first row, so every
    chunk has one shape and a search compiles once)."""
    import jax
    n = len(probe)
    batch_size = min(batch_size, n)
    for start in range(0, n, batch_size):
        rows = np.arange(start, min(start + batch_size, n))
        padded = np.concatenate([rows, np.full(batch_size - len(rows), rows[0])]) if len(rows) < batch_size else rows
        yield rows, jax.tree.map(lambda x: x[padded], probe.states)


def network_outputs(probe: ProbeSet, apply: Callable, variables, batch_size: int = 128
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(greedy legal action [N], value [N]) of a network: apply(variables, obs) -> NetworkOutput."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def run(variables, states):
        out = apply(variables, states.observation)
        logits = jnp.where(states.legal_action_mask, out.policy_logits, -jnp.inf)
        return jnp.argmax(logits, axis=-1), out.value.reshape(-1)

    actions, values = np.zeros(len(probe), np.int32), np.zeros(len(probe), np.float32)
    for rows, states in batches(probe, batch_size):
        a, v = jax.device_get(run(variables, states))
        actions[rows], values[rows] = a[:len(rows)], v[:len(rows)]
    return actions, values


def mover_actions(probe: ProbeSet, mover: BatchMover, seed: int = 0, batch_size: int = 128) -> np.ndarray:
    """[N] the moves of a batched mover (e.g. a search: arena.batched.mate_puzzles.search_mover)."""
    import jax
    actions = np.zeros(len(probe), np.int32)
    for k, (rows, states) in enumerate(batches(probe, batch_size)):
        actions[rows] = np.asarray(mover(states, jax.random.PRNGKey(seed + k)))[:len(rows)]
    return actions


def probe_network(probe: ProbeSet, apply: Callable, variables, search: Optional[Callable] = None,
                  seed: int = 0, batch_size: int = 128) -> ProbeReport:
    """The probe figures of one network: its raw policy, its value and (given `search`, a
    search.make_search function) its search."""
    actions, values = network_outputs(probe, apply, variables, batch_size)
    searched = None
    if search is not None:
        from arena.batched.mate_puzzles import search_mover
        searched = probe.score(mover_actions(probe, search_mover(search, variables), seed, batch_size))
    return ProbeReport(len(probe), probe.score(actions), searched, probe.value_score(values), probe.random_score())


# -- building the set (scripts/build_probe.py annotates it with Stockfish) ------------------------
def pick_positions(pgn: str | Path, per_game: int, min_ply: int, seed: int,
                   exclude: Optional[set[str]] = None) -> list[tuple[str, str, tuple[str, ...], str]]:
    """(id, start_fen, history, fen) for `per_game` positions drawn at random from each game of
    `pgn`, at ply >= min_ply, with at least two legal moves, whose board (FEN without clocks) is
    not in `exclude`."""
    import chess.pgn
    rng = random.Random(seed)
    out = []
    with open(pgn, encoding="utf-8", errors="replace") as f:
        index = 0
        while (game := chess.pgn.read_game(f)) is not None:
            board = game.board()
            start, history, candidates = board.fen(), [], []
            for move in game.mainline_moves():
                if len(history) >= min_ply and board.legal_moves.count() > 1 and \
                        (exclude is None or board_key(board.fen()) not in exclude):
                    candidates.append((tuple(history), board.fen()))
                history.append(move.uci())
                board.push(move)
            for hist, fen in sorted(rng.sample(candidates, min(per_game, len(candidates)))):
                out.append((f"{Path(pgn).name}#{index}@{len(hist)}", start, hist, fen))
            index += 1
    return out


def board_key(fen: str) -> str:
    """A FEN without its move clocks: the same board reached at another move number is the same."""
    return " ".join(fen.split()[:4])
