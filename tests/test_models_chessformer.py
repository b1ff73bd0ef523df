"""Chessformer: GAB, position-bias ablations, attention policy on real puzzle positions, WDL, grads."""
import csv
import functools

import chess
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games
import models
from games import chess_bridge, compact_actions, square_encoding, uci_vocab
from models import attention_policy as ap
from models.activations import mish
from models.attention import MultiHeadAttention
from models.chessformer import Chessformer, ChessformerConfig
from models.position_bias import GeometricAttentionBias, Relative2DBias, SharedBiasProjection
from runtime.data import data_file

TINY = dict(num_layers=1, embedding_dim=32, head_dim=16, mlp_dim=32, gab_d1=4, gab_d2=16, gab_d3=8)
UNDER = {chess.ROOK: 0, chess.BISHOP: 1, chess.KNIGHT: 2}


@functools.lru_cache(maxsize=None)
def puzzle_boards(limit: int = 160, per_kind: int = 25) -> tuple:
    """Puzzle positions (after the opponent's first move), plus some with promotions, castling and
    en passant among the legal moves, so every special move kind is covered."""
    boards, kinds = [], {"promotion": 0, "castling": 0, "en_passant": 0}
    with open(data_file("puzzles", "lichess_puzzles_10k_untagged.csv")) as f:
        for i, row in enumerate(csv.DictReader(f)):
            board = chess.Board(row["FEN"])
            board.push_uci(row["Moves"].split()[0])
            legal = list(board.legal_moves)
            has = {"promotion": any(m.promotion for m in legal),
                   "castling": any(board.is_castling(m) for m in legal),
                   "en_passant": any(board.is_en_passant(m) for m in legal)}
            wanted = [k for k, v in has.items() if v and kinds[k] < per_kind]
            if i < limit or wanted:
                boards.append(board)
                for k, v in has.items():
                    kinds[k] += v
            if i >= limit and all(n >= per_kind for n in kinds.values()):
                break
    assert all(n > 0 for n in kinds.values()), kinds
    return tuple(boards)


def expected_pair(move: chess.Move, white: bool) -> int:
    """Independent statement of the pair layout: side-to-move squares, under-promotions after 4096."""
    f, t = move.from_square, move.to_square
    if not white:
        f, t = chess.square_mirror(f), chess.square_mirror(t)
    if move.promotion in UNDER:
        return 4096 + (chess.square_file(f) * 8 + chess.square_file(t)) * 3 + UNDER[move.promotion]
    return f * 64 + t


class GABProbe(nn.Module):
    pooled: bool

    @nn.compact
    def __call__(self, squares):
        x = nn.Dense(32)(squares)
        codes = GeometricAttentionBias(num_heads=4, d1=4, d2=16, d3=8, pooled=self.pooled)(x)
        return SharedBiasProjection()(codes)


@pytest.mark.parametrize("pooled", [False, True])
def test_gab_bias_has_shape_bhxx64_and_changes_with_the_position(pooled):
    boards = puzzle_boards()[:3]
    squares = jnp.asarray(square_encoding.encode_boards(boards))
    probe = GABProbe(pooled)
    bias = probe.apply(probe.init(jax.random.PRNGKey(0), squares), squares)
    assert bias.shape == (3, 4, 64, 64)
    assert float(jnp.max(jnp.abs(bias[0] - bias[1]))) > 1e-4
    assert float(jnp.max(jnp.abs(bias[1] - bias[2]))) > 1e-4


def test_relative_2d_bias_depends_only_on_square_offsets():
    module = Relative2DBias(num_heads=2)
    variables = module.init(jax.random.PRNGKey(0))
    table = jax.random.normal(jax.random.PRNGKey(1), (2, 15, 15))
    bias = np.asarray(module.apply({"params": {"table": table}}))
    assert bias.shape == (1, 2, 64, 64) and variables["params"]["table"].shape == (2, 15, 15)
    sq = chess.parse_square
    assert bias[0, 1, sq("a1"), sq("b3")] == bias[0, 1, sq("e4"), sq("f6")] == table[1, 7 - 2, 7 - 1]
    assert bias[0, 0, sq("h8"), sq("a1")] == table[0, 14, 14]


@pytest.mark.parametrize("encoding", ["gab", "absolute", "relative_2d"])
def test_outputs_for_each_position_encoding(encoding):
    cfg = ChessformerConfig(**TINY, input_features=112, policy_space="compact", position_encoding=encoding)
    net = Chessformer(cfg)
    squares = jnp.asarray(square_encoding.encode_boards(puzzle_boards()[:2]))
    variables = net.init(jax.random.PRNGKey(0), squares)
    out = net.apply(variables, squares)
    assert out.policy_logits.shape == (2, 1858) and out.wdl_logits.shape == (2, 3)
    probs = jax.nn.softmax(out.wdl_logits)
    np.testing.assert_allclose(out.value, probs[:, 0] - probs[:, 2], rtol=1e-5, atol=1e-6)
    assert bool(jnp.all(jnp.abs(out.value) <= 1))
    has_pos = {"gab": "gab_projection", "absolute": "square_embedding", "relative_2d": "relative_bias_0"}
    assert has_pos[encoding] in variables["params"]


def test_self_play_chessformer_gives_every_legal_pgx_move_its_own_finite_logit():
    """pgx observations in, pgx actions out: each legal move of the puzzle positions gets the
    attention logit of its (from, to[, under-promotion]) pair, never the filler."""
    boards = puzzle_boards()
    states = [chess_bridge.fen_to_state(b.fen()) for b in boards]
    obs = jnp.asarray(np.stack([np.asarray(s.observation) for s in states]))
    cfg = models.NetworkConfig(family="chessformer", chessformer=ChessformerConfig(**TINY))
    net = models.make_network(cfg, games.make("chess").spec)
    variables = net.init(jax.random.PRNGKey(0), obs[:1])
    out = jax.jit(net.apply)(variables, obs)
    pairs = jax.jit(functools.partial(net.apply, return_pairs=True))(variables, obs).policy_logits
    logits, pairs = np.asarray(out.policy_logits), np.asarray(pairs)
    assert logits.shape == (len(boards), 4672)
    for b, board in enumerate(boards):
        moves = list(board.legal_moves)
        actions = [chess_bridge.move_to_pgx_action(m, board.turn) for m in moves]
        assert np.asarray(states[b].legal_action_mask)[actions].all()
        assert np.asarray(states[b].legal_action_mask).sum() == len(moves)
        got = logits[b, actions]
        assert np.isfinite(got).all() and (got > ap.NEVER_LOGIT / 2).all()
        expected = [expected_pair(m, board.turn) for m in moves]
        assert len(set(expected)) == len(moves)  # no two legal moves share a logit
        np.testing.assert_array_equal(got, pairs[b, expected])


@pytest.mark.parametrize("space", ["compact", "uci_vocab"])
def test_student_spaces_give_every_legal_move_its_pair_logit(space):
    boards = puzzle_boards()
    squares = jnp.asarray(square_encoding.encode_boards(boards))
    net = Chessformer(ChessformerConfig(**TINY, input_features=112, policy_space=space))
    variables = net.init(jax.random.PRNGKey(0), squares[:1])
    logits = np.asarray(jax.jit(net.apply)(variables, squares).policy_logits)
    pairs = np.asarray(jax.jit(functools.partial(net.apply, return_pairs=True))(variables, squares).policy_logits)
    assert logits.shape == (len(boards), 1858 if space == "compact" else 1968)
    for b, board in enumerate(boards):
        moves = list(board.legal_moves)
        if space == "compact":
            index = [compact_actions.uci_to_compact(m.uci(), board.turn) for m in moves]
        else:
            index = [uci_vocab.move_to_index(m.uci()) for m in moves]
        got = logits[b, index]
        assert np.isfinite(got).all() and (got > ap.NEVER_LOGIT / 2).all()
        np.testing.assert_array_equal(got, pairs[b, [expected_pair(m, board.turn) for m in moves]])


def test_jit_and_grad_through_gab_and_policy():
    squares = jnp.asarray(square_encoding.encode_boards(puzzle_boards()[:4]))
    net = Chessformer(ChessformerConfig(**TINY, input_features=112, policy_space="compact"))
    variables = net.init(jax.random.PRNGKey(0), squares)
    targets = jnp.array([0, 10, 100, 1000])

    @jax.jit
    def loss(params):
        out = net.apply({"params": params}, squares)
        logp = jax.nn.log_softmax(out.policy_logits)
        return -jnp.mean(jnp.take_along_axis(logp, targets[:, None], 1)) + jnp.mean(out.value ** 2)

    grads = jax.grad(loss)(variables["params"])
    assert all(bool(jnp.all(jnp.isfinite(g))) for g in jax.tree.leaves(grads))
    for name in ("gab_projection", "gab_0", "policy", "wdl"):
        assert sum(float(jnp.abs(g).sum()) for g in jax.tree.leaves(grads[name])) > 0, name


def test_wrong_square_features_is_a_clear_error():
    net = Chessformer(ChessformerConfig(**TINY, input_features=112))
    with pytest.raises(ValueError, match=r"\[B, 64, 112\]"):
        net.init(jax.random.PRNGKey(0), jnp.zeros((1, 64, 119)))


def reference_attention(params, x, bias, num_heads, head_dim):
    """Textbook multi-head attention from the module's own parameters: einsums, jax.nn.softmax."""
    proj = {n: jnp.einsum("btd,dhk->bthk", x, params[n]["kernel"]) + params[n]["bias"] for n in ("query", "key", "value")}
    logits = jnp.einsum("bqhk,bthk->bhqt", proj["query"], proj["key"]) / np.sqrt(head_dim) + bias
    out = jnp.einsum("bhqt,bthk->bqhk", jax.nn.softmax(logits, axis=-1), proj["value"])
    return jnp.einsum("bqhk,hkd->bqd", out, params["out"]["kernel"]) + params["out"]["bias"]


@pytest.mark.parametrize("bias_batch", [1, 3])
def test_attention_matches_the_textbook_formula_in_values_and_gradients(bias_batch):
    heads, head_dim = 4, 8
    module = MultiHeadAttention(heads, head_dim)
    x = jax.random.normal(jax.random.PRNGKey(0), (3, 64, 32))
    # Large logits: the late normalisation and the stop-gradient max must stay exact there too.
    bias = 30.0 * jax.random.normal(jax.random.PRNGKey(1), (bias_batch, heads, 64, 64))
    params = module.init(jax.random.PRNGKey(2), x, bias)["params"]
    ours = lambda p, x, b: jnp.sum(jnp.sin(module.apply({"params": p}, x, b)))
    ref = lambda p, x, b: jnp.sum(jnp.sin(reference_attention(p, x, b, heads, head_dim)))
    np.testing.assert_allclose(ours(params, x, bias), ref(params, x, bias), rtol=1e-4)
    for got, want in zip(jax.tree.leaves(jax.grad(ours, argnums=(0, 1, 2))(params, x, bias)),
                         jax.tree.leaves(jax.grad(ref, argnums=(0, 1, 2))(params, x, bias))):
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-5)


def test_mish_matches_jax_mish_in_values_and_gradients_and_stays_finite_at_large_inputs():
    finite = jnp.concatenate([jnp.linspace(-40.0, 40.0, 20001), jnp.array([-1e4, 1e4])])
    np.testing.assert_allclose(mish(finite), jax.nn.mish(finite), atol=3e-6, rtol=1e-6)
    grad = lambda f: jax.vmap(jax.grad(f))(finite)
    np.testing.assert_allclose(grad(mish), grad(jax.nn.mish), atol=1e-5)
    assert bool(jnp.all(jnp.isfinite(mish(finite)))) and bool(jnp.all(jnp.isfinite(grad(mish))))


@pytest.mark.parametrize("encoding", ["gab", "relative_2d"])
def test_bfloat16_compute_shares_the_float32_parameters_and_keeps_float32_outputs(encoding):
    squares = jax.random.bernoulli(jax.random.PRNGKey(0), 0.1, (3, 64, 112)).astype(jnp.float32)
    nets = {dt: Chessformer(ChessformerConfig(input_features=112, position_encoding=encoding, compute_dtype=dt, **TINY))
            for dt in ("float32", "bfloat16")}
    # jitted: one compile per function (kept by the persistent cache) instead of one per op
    params = jax.jit(nets["float32"].init)(jax.random.PRNGKey(1), squares)
    bf16_params = jax.eval_shape(nets["bfloat16"].init, jax.random.PRNGKey(1), squares)
    assert jax.tree.map(lambda a: (a.shape, a.dtype), params) == jax.tree.map(lambda a: (a.shape, a.dtype), bf16_params)
    full, half = (jax.jit(nets[dt].apply)(params, squares) for dt in ("float32", "bfloat16"))
    for a, b in zip(full[:3], half[:3]):  # policy logits, value, WDL
        assert b.dtype == jnp.float32
        legal = np.asarray(a) > ap.NEVER_LOGIT / 2  # the filler logit is -1e9 in both
        a, b = np.asarray(a)[legal], np.asarray(b)[legal]
        # bfloat16's 8-bit mantissa: within a tenth of the outputs' spread (measured: 2-6% of it),
        # a bound that scales with values near 0 instead of passing any value head
        spread = a.std()
        assert spread > 0.05
        np.testing.assert_allclose(b, a, atol=0.1 * spread)
    matmuls = [e for e in jax.make_jaxpr(lambda s: nets["bfloat16"].apply(params, s))(squares).jaxpr.eqns
               if e.primitive.name == "dot_general"]
    assert len(matmuls) > 10 and all(e.outvars[0].aval.dtype == jnp.bfloat16 for e in matmuls)

    def loss(p):
        out = nets["bfloat16"].apply(p, squares)
        return jnp.mean(out.value) + jnp.mean(jax.nn.log_softmax(out.policy_logits)[:, :10])

    grads = jax.jit(jax.grad(loss))(params)
    assert all(g.dtype == jnp.float32 and bool(jnp.all(jnp.isfinite(g))) for g in jax.tree.leaves(grads))


def test_chess_tables_first_built_inside_a_jit_trace_are_concrete():
    """models/attention_policy.py imports the chess tables on first use (a tic-tac-toe process never
    builds pgx's chess rule core). In a fresh process whose first use is inside a jit trace, the
    tables must still be concrete arrays, and a run of another game must not load them at all."""
    import subprocess
    import sys
    from pathlib import Path
    code = (
        "import sys, jax, jax.numpy as jnp\n"
        "import selfplay.run\n"
        "from models import attention_policy as ap\n"
        "assert 'pgx._src.games.chess' not in sys.modules and 'games.chess_bridge' not in sys.modules\n"
        "pair = jax.jit(lambda x: ap.gather(x, ap.pgx_index()).sum() + ap.gather(x, ap.compact_index()).sum())\n"
        "print(float(pair(jnp.ones((1, ap.PAIR_SPACE)))))\n"
        "from games import chess_bridge\n"
        "assert not isinstance(chess_bridge.pgx_internals.from_plane(), jax.core.Tracer)\n")
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert float(result.stdout.split()[-1]) == 4672 + 1858  # every gathered logit, 1 each
