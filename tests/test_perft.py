"""perft through pgx's batched chess step on the published suites, against their node counts.

The frontier is expanded with pgx's rule step (`env.game.step`, the move generator under
`pgx.make("chess").step`) in fixed-size chunks, so the step compiles once. Perft counts moves
in every position, including ones the environment would end (e.g. insufficient material), so
the environment's terminal handling stays out of it; that is tested in test_chess_rules.
"""
import functools

import jax
import numpy as np
import pgx

from games import chess_bridge as cb
from games import pgx_internals
from runtime.data import data_file

CHUNK = 512
# Positions also searched to depth 4: castling both ways, promotions, en passant, discovered
# checks along a rank (CPW-3) and a knight ending that reaches bare kings.
DEPTH_4 = {
    "4k3/8/8/8/8/8/8/4K2R w K - 0 1",
    "r3k3/1K6/8/8/8/8/8/8 w q - 0 1",
    "8/Pk6/8/8/8/8/6Kp/8 w - - 0 1",
    "1k6/8/8/5pP1/4K1P1/8/8/8 w - f6 0 1",
    "K7/8/2n5/1n6/8/8/8/k6N w - - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
}


def _suite():
    positions = []
    for name in ("perftsuite_127.epd", "cpw_perft_positions_7.epd"):
        with open(data_file("perft", name)) as f:
            for line in f:
                fen, *fields = [part.strip() for part in line.split(";")]
                counts = {int(k[1:]): int(v) for k, v in (field.split()[:2] for field in fields
                                                        if field.startswith("D"))}
                positions.append((fen, counts))
    return positions


@functools.lru_cache(maxsize=1)
def _step():
    return jax.jit(jax.vmap(pgx.make("chess").game.step))


def _expand(frontier, parents, actions):
    """Children of frontier[parents] after actions, stepped in chunks of CHUNK (padded)."""
    n = len(actions)
    pad = (-n) % CHUNK
    parents = np.concatenate([parents, np.zeros(pad, parents.dtype)])
    actions = np.concatenate([actions, np.zeros(pad, actions.dtype)])
    chunks = []
    for start in range(0, len(actions), CHUNK):
        batch = jax.tree.map(lambda x: x[parents[start:start + CHUNK]], frontier)
        chunks.append(jax.device_get(_step()(batch, actions[start:start + CHUNK])))
    children = jax.tree.map(lambda *xs: np.concatenate(xs)[:n], *chunks)
    return children


def perft(fens, depth):
    """perft of many FENs at once -> counts [len(fens), depth] (column d-1 = perft(d)).

    All positions share one frontier (each node remembers its root), so the fixed-size
    chunks stay full.
    """
    roots = [pgx_internals.rule_state(cb.fen_to_state(fen)) for fen in fens]
    frontier = jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *roots)
    root_of = np.arange(len(fens))
    counts = np.zeros((len(fens), depth), np.int64)
    for d in range(depth):
        masks = frontier.legal_action_mask
        counts[:, d] = np.bincount(root_of, weights=masks.sum(axis=1), minlength=len(fens))
        if d + 1 < depth:
            parents, actions = np.nonzero(masks)
            frontier = _expand(frontier, parents.astype(np.int32), actions.astype(np.int32))
            root_of = root_of[parents]
    return counts


def test_suite_has_the_published_positions():
    suite = _suite()
    assert len(suite) == 134
    assert all(fen in {f for f, _ in suite} for fen in DEPTH_4)
    start = dict(suite)["rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"]
    assert [start[d] for d in (1, 2, 3)] == [20, 400, 8902]


def test_perft_depth_3_on_every_position():
    suite = _suite()
    got = perft([fen for fen, _ in suite], 3)
    expected = np.array([[counts[d] for d in (1, 2, 3)] for _, counts in suite])
    wrong = [(fen, g.tolist(), e.tolist()) for (fen, _), g, e in zip(suite, got, expected) if (g != e).any()]
    assert not wrong, wrong


def test_perft_depth_4():
    suite = dict(_suite())
    fens = sorted(DEPTH_4)
    got = perft(fens, 4)
    expected = np.array([[suite[fen][d] for d in (1, 2, 3, 4)] for fen in fens])
    wrong = [(fen, g.tolist(), e.tolist()) for fen, g, e in zip(fens, got, expected) if (g != e).any()]
    assert not wrong, wrong
