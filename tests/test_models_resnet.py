"""AlphaZero ResNet: shapes on every game, the chess head's square order against pgx, BN, grads."""
from pathlib import Path

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games
import models
from configs.loader import ConfigError, load
from models.resnet import ResNetConfig, chess_planes_to_pgx_actions
from selfplay.config import SelfPlayConfig

TINY = ResNetConfig(num_blocks=1, filters=8, value_hidden=16)


@pytest.mark.parametrize("name", ["chess", "tic_tac_toe", "connect_four", "go_9x9"])
def test_shapes_and_value_range_on_every_game(name):
    spec = games.make(name).spec
    obs = jax.random.bernoulli(jax.random.PRNGKey(0), 0.3, (3, *spec.observation_shape))
    net = models.make_network(models.NetworkConfig(resnet=TINY), spec)
    variables = net.init(jax.random.PRNGKey(1), obs, train=False)
    out = net.apply(variables, obs, train=False)
    assert out.policy_logits.shape == (3, spec.num_actions)
    assert out.value.shape == (3,) and out.wdl_logits is None
    assert bool(jnp.all(jnp.abs(out.value) <= 1.0))
    assert bool(jnp.all(jnp.isfinite(out.policy_logits)))


FENS = [  # white and black to move, pieces off their home squares
    "r6k/pp2r2p/4Rp1Q/3p4/8/1N1P2R1/PqP2bPP/7K b - - 0 24",
    "5rk1/1p3ppp/pq3b2/8/8/1P1Q1N2/P4PPP/3R2K1 w - - 2 27",
    "8/2P5/8/3k4/8/8/5K2/8 w - - 0 1",
]


def test_chess_planes_follow_pgx_action_order():
    """Every legal pgx action's from-square must hold one of the mover's pieces (pgx obs planes 0-5)."""
    from games import chess_bridge

    states = [chess_bridge.fen_to_state(fen) for fen in FENS]
    obs = np.stack([np.asarray(s.observation) for s in states])
    legal = np.stack([np.asarray(s.legal_action_mask) for s in states])
    own = obs[..., 0:6].sum(-1)  # [B, 8, 8] 1 where the side to move has a piece
    planes = np.broadcast_to(own[..., None], (*own.shape, 73))
    by_action = np.asarray(chess_planes_to_pgx_actions(jnp.asarray(planes)))
    assert legal.any(axis=1).all()
    assert (by_action[legal] == 1).all()
    # a square-specific code: each legal action's value is its from-square's (file, rank) read via python-chess
    for fen, mask in zip(FENS, legal):
        board = chess_bridge.parse_fen(fen)
        code = np.zeros((1, 8, 8, 73), np.float32)
        for row in range(8):
            for col in range(8):
                code[0, row, col] = (7 - row) * 8 + col  # obs row 0 is the mover's 8th rank
        mapped = np.asarray(chess_planes_to_pgx_actions(jnp.asarray(code)))[0]
        for move in chess_bridge.legal_moves_of_mask(mask, board):
            src = move.from_square if board.turn else chess.square_mirror(move.from_square)
            assert mapped[chess_bridge.move_to_pgx_action(move, board.turn)] == src
    # and the plane index is the action's plane
    plane_ids = np.broadcast_to(np.arange(73, dtype=np.float32), (1, 8, 8, 73))
    assert (np.asarray(chess_planes_to_pgx_actions(jnp.asarray(plane_ids)))[0] == np.arange(4672) % 73).all()


def test_train_mode_updates_batch_stats_and_grads_flow():
    spec = games.make("connect_four").spec
    cfg = models.NetworkConfig(resnet=ResNetConfig(num_blocks=1, filters=8, value_hidden=16,
                                                   squeeze_excitation=True, wdl_head=True))
    net = models.make_network(cfg, spec)
    obs = jax.random.bernoulli(jax.random.PRNGKey(0), 0.4, (4, *spec.observation_shape)).astype(jnp.float32)
    variables = net.init(jax.random.PRNGKey(1), obs, train=False)
    out, updates = net.apply(variables, obs, train=True, mutable=["batch_stats"])
    assert out.wdl_logits.shape == (4, 3)
    changed = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), variables["batch_stats"], updates["batch_stats"])
    assert any(jax.tree.leaves(changed))

    @jax.jit
    def loss(params):
        out, _ = net.apply({**variables, "params": params}, obs, train=True, mutable=["batch_stats"])
        return jnp.mean(out.value ** 2) + jnp.mean(jax.nn.logsumexp(out.policy_logits, -1))

    grads = jax.grad(loss)(variables["params"])
    norms = [float(jnp.linalg.norm(g)) for g in jax.tree.leaves(grads)]
    assert all(np.isfinite(norms)) and sum(norms) > 0


def test_conv_head_on_non_chess_game_is_a_clear_error():
    spec = games.make("tic_tac_toe").spec
    net = models.make_network(models.NetworkConfig(resnet=ResNetConfig(num_blocks=1, filters=4,
                                                                        policy_head="conv")), spec)
    with pytest.raises(ValueError, match="73-plane"):
        net.init(jax.random.PRNGKey(0), jnp.zeros((1, 3, 3, 2)))


def test_value_channels_widen_the_value_head():
    spec = games.make("connect_four").spec
    obs = jax.random.bernoulli(jax.random.PRNGKey(0), 0.3, (2, *spec.observation_shape))
    cfg = ResNetConfig(num_blocks=1, filters=8, value_hidden=16, value_channels=4)
    net = models.make_network(models.NetworkConfig(resnet=cfg), spec)
    params = net.init(jax.random.PRNGKey(1), obs, train=False)["params"]
    kernels = [k for k in jax.tree.leaves(params) if k.shape == (1, 1, 8, 4)]
    assert len(kernels) == 1  # the value head's 1x1 conv, 4 planes
    dense_in = {k.shape[0] for k in jax.tree.leaves(params) if k.ndim == 2}
    assert 6 * 7 * 4 in dense_in  # the value MLP reads every plane of every square
    one = models.make_network(models.NetworkConfig(resnet=TINY), spec)
    assert not any(k.shape == (1, 1, 8, 4) for k in jax.tree.leaves(one.init(jax.random.PRNGKey(1), obs)["params"]))


def test_value_channels_below_one_is_one_clear_error():
    with pytest.raises(ValueError, match="value_channels must be >= 1"):
        ResNetConfig(value_channels=0)


@pytest.mark.parametrize("game", ["chess", "connect_four"])
def test_bfloat16_compute_keeps_float32_parameters_and_outputs(game):
    """Mixed precision: the same float32 parameters, convolutions in bf16, outputs float32 and within
    bf16 rounding of the float32 network's."""
    spec = games.make(game).spec
    configs = {dt: models.NetworkConfig(resnet=ResNetConfig(num_blocks=2, filters=16, value_hidden=16,
                                                            squeeze_excitation=True, wdl_head=True,
                                                            compute_dtype=dt))
               for dt in ("float32", "bfloat16")}
    nets = {dt: models.make_network(cfg, spec) for dt, cfg in configs.items()}
    obs = jax.random.bernoulli(jax.random.PRNGKey(0), 0.3, (4, *spec.observation_shape)).astype(jnp.float32)
    # jitted: one compile per function (kept by the persistent cache) instead of one per op
    variables = jax.jit(nets["float32"].init)(jax.random.PRNGKey(1), obs)
    bf16_variables = jax.eval_shape(nets["bfloat16"].init, jax.random.PRNGKey(1), obs)
    assert jax.tree.map(lambda a: (a.shape, a.dtype), bf16_variables) == \
        jax.tree.map(lambda a: (a.shape, a.dtype), variables)  # one checkpoint format for both
    full, half = (jax.jit(nets[dt].apply)(variables, obs) for dt in ("float32", "bfloat16"))
    for a, b in zip(full[:3], half[:3]):  # policy logits, value, WDL
        assert b.dtype == jnp.float32
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), atol=0.05 * float(jnp.abs(a).max()) + 0.02)
    convs = [e for e in jax.make_jaxpr(lambda o: nets["bfloat16"].apply(variables, o))(obs).jaxpr.eqns
             if e.primitive.name == "conv_general_dilated"]
    assert convs and all(e.outvars[0].aval.dtype == jnp.bfloat16 for e in convs)

    def loss(params):
        out, updates = nets["bfloat16"].apply({**variables, "params": params}, obs, train=True, mutable=["batch_stats"])
        return jnp.mean(out.value ** 2) + jnp.mean(jax.nn.logsumexp(out.policy_logits, -1)), updates

    grads, updates = jax.jit(jax.grad(loss, has_aux=True))(variables["params"])
    assert all(g.dtype == jnp.float32 and bool(jnp.all(jnp.isfinite(g))) for g in jax.tree.leaves(grads))
    # a training step's BatchNorm update keeps float32 statistics (and moves them)
    stats, old = jax.tree.leaves(updates["batch_stats"]), jax.tree.leaves(variables["batch_stats"])
    assert len(stats) == len(old) and all(s.dtype == jnp.float32 for s in stats)
    assert any(not np.allclose(s, o) for s, o in zip(stats, old))


def test_unknown_compute_dtype_is_a_one_line_config_error():
    with pytest.raises(ConfigError, match="compute_dtype"):
        load(SelfPlayConfig, Path(__file__).resolve().parents[1] / "configs/connect_four.yaml",
             ["network.resnet.compute_dtype=float16"])


def _chess_obs(n: int, seed: int) -> np.ndarray:
    """Observations of positions of random games: captures leave every kind of material imbalance."""
    from test_material import random_positions

    from games import chess_bridge
    fens = [board.fen() for board in random_positions(n, seed)]
    return np.asarray(games.make("chess").observe(chess_bridge.fens_to_states(fens)))


def test_the_value_input_skip_starts_silent_and_renames_nothing():
    """At initialisation the skip adds exactly zero: the same key gives the same outputs, and every
    parameter of the plain network keeps its name and value."""
    spec = games.make("chess").spec
    obs = _chess_obs(4, seed=1)
    nets = {skip: models.make_network(models.NetworkConfig(resnet=ResNetConfig(
        num_blocks=1, filters=8, value_hidden=16, value_input_skip=skip)), spec) for skip in (False, True)}
    variables = {skip: net.init(jax.random.PRNGKey(0), obs, train=False) for skip, net in nets.items()}
    plain, skipped = (jax.tree_util.tree_leaves_with_path(variables[s]["params"]) for s in (False, True))
    assert dict(plain).keys() < dict(skipped).keys()
    for path, leaf in plain:
        np.testing.assert_array_equal(leaf, dict(skipped)[path])
    outs = {skip: nets[skip].apply(variables[skip], obs, train=False) for skip in (False, True)}
    np.testing.assert_array_equal(outs[False].value, outs[True].value)
    np.testing.assert_array_equal(outs[False].policy_logits, outs[True].policy_logits)


def test_the_value_input_skip_learns_material_that_generalises_from_few_boards():
    """Trained on 64 boards toward tanh(0.184 x material lead) (learner.material_value=1, every game
    drawn), a network with the skip values 64 unseen boards better than the same network without it,
    which fits its boards by memory."""
    from games import material
    from learner.config import LearnerConfig
    from learner.train import init_train_state, make_train_step
    from replay.messages import TrainingBatch
    spec = games.make("chess").spec
    train_obs, test_obs = _chess_obs(64, seed=2), _chess_obs(64, seed=3)
    target = np.tanh(0.184104 * np.asarray(material.observation_balance(test_obs)))
    W = 8
    batch = TrainingBatch(observation=train_obs, legal_actions=np.tile(np.arange(W, dtype=np.int32), (64, 1)),
                          policy=np.full((64, W), 1 / W, np.float32), z=np.zeros(64, np.float32))
    cfg = LearnerConfig(lr_values=(0.02,), lr_boundaries=(), batch_size=64, material_value=1.0)
    errors = {}
    for skip in (False, True):
        net = models.make_network(models.NetworkConfig(resnet=ResNetConfig(
            num_blocks=1, filters=16, value_hidden=32, value_input_skip=skip)), spec)
        state = init_train_state(net, cfg, train_obs[:1], jax.random.PRNGKey(0))
        step = make_train_step(net, cfg, material_of=material.observation_balance)
        for _ in range(150):
            state, _ = step(state, batch)
        v = net.apply({"params": state.params, "batch_stats": state.batch_stats}, test_obs, train=False).value
        errors[skip] = float(np.mean((np.asarray(v) - target) ** 2))
    assert errors[True] < 0.5 * errors[False], errors
