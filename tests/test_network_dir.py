"""Checkpoints: bit-exact round trips for every family; clear errors for broken directories."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml

import games
import models
from models import network_dir
from models.chessformer import ChessformerConfig
from models.resnet import ResNetConfig
from models.searchless import SearchlessConfig


def _equal_trees(a, b) -> bool:
    la, lb = jax.tree_util.tree_leaves_with_path(a), jax.tree_util.tree_leaves_with_path(b)
    return len(la) == len(lb) and all(
        pa == pb and np.asarray(x).dtype == np.asarray(y).dtype and np.array_equal(np.asarray(x), np.asarray(y))
        for (pa, x), (pb, y) in zip(la, lb))


@pytest.fixture(scope="module")
def resnet_checkpoint(tmp_path_factory):
    cfg = models.NetworkConfig(resnet=ResNetConfig(num_blocks=1, filters=4, value_hidden=8, wdl_head=True))
    spec = games.make("connect_four").spec
    net = models.make_network(cfg, spec)
    obs = jax.random.bernoulli(jax.random.PRNGKey(0), 0.5, (2, *spec.observation_shape)).astype(jnp.float32)
    variables = net.init(jax.random.PRNGKey(1), obs)
    _, updates = net.apply(variables, obs, train=True, mutable=["batch_stats"])  # non-trivial batch_stats
    variables = {**variables, **updates}
    path = network_dir.save(tmp_path_factory.mktemp("ckpt") / "net", cfg, variables, game="connect_four",
                           metadata={"step": 7})
    return path, cfg, variables, net, obs


def test_resnet_round_trip_is_bit_exact(resnet_checkpoint):
    path, cfg, variables, net, obs = resnet_checkpoint
    ckpt = network_dir.load(path)
    assert ckpt.config == cfg and ckpt.game == "connect_four" and ckpt.metadata == {"step": 7}
    assert _equal_trees(variables, ckpt.variables)
    a, b = net.apply(variables, obs), ckpt.module().apply(ckpt.variables, obs)
    assert np.array_equal(a.policy_logits, b.policy_logits) and np.array_equal(a.value, b.value)


@pytest.mark.parametrize("cfg,example", [
    (models.NetworkConfig(family="searchless", searchless=SearchlessConfig(num_layers=1, num_heads=2, embedding_dim=8)),
     jnp.zeros((1, 78), jnp.int32)),
    (models.NetworkConfig(family="chessformer", chessformer=ChessformerConfig(
        num_layers=1, embedding_dim=16, head_dim=8, mlp_dim=16, gab_d1=2, gab_d2=8, gab_d3=4, input_features=112,
        policy_space="compact")), jnp.zeros((1, 64, 112))),
])
def test_student_round_trip_is_bit_exact(tmp_path, cfg, example):
    net = models.make_student(cfg)
    variables = net.init(jax.random.PRNGKey(3), example)
    ckpt = network_dir.load(network_dir.save(tmp_path / "s", cfg, variables))
    assert ckpt.game is None and ckpt.config == cfg
    assert _equal_trees(variables, ckpt.variables)


def _copy(path, tmp_path):
    import shutil
    return shutil.copytree(path, tmp_path / "copy")


def test_missing_directory_and_files(tmp_path, resnet_checkpoint):
    with pytest.raises(FileNotFoundError, match="not found"):
        network_dir.load(tmp_path / "nothing")
    copy = _copy(resnet_checkpoint[0], tmp_path)
    (copy / network_dir.PARAMS_FILE).unlink()
    with pytest.raises(FileNotFoundError, match="params.msgpack"):
        network_dir.load(copy)


def test_truncated_and_corrupted_params(tmp_path, resnet_checkpoint):
    copy = _copy(resnet_checkpoint[0], tmp_path)
    params = copy / network_dir.PARAMS_FILE
    data = params.read_bytes()
    params.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated"):
        network_dir.load(copy)
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    params.write_bytes(bytes(flipped))
    with pytest.raises(ValueError, match="checksum"):
        network_dir.load(copy)


def test_config_that_does_not_fit_the_params(tmp_path, resnet_checkpoint):
    copy = _copy(resnet_checkpoint[0], tmp_path)
    header_path = copy / network_dir.CONFIG_FILE
    header = yaml.safe_load(header_path.read_text())
    header["network"]["resnet"]["filters"] = 6
    header_path.write_text(yaml.safe_dump(header))
    with pytest.raises(ValueError, match="shape"):
        network_dir.load(copy)
    header["network"]["resnet"]["filters"] = 4
    header["network"]["resnet"]["num_blocks"] = 2
    header_path.write_text(yaml.safe_dump(header))
    with pytest.raises(ValueError, match="do not fit"):
        network_dir.load(copy)
    header["network"]["resnet"]["no_such_field"] = 1
    header_path.write_text(yaml.safe_dump(header))
    with pytest.raises(ValueError, match="no_such_field"):
        network_dir.load(copy)
    header_path.write_text("format: [unclosed")
    with pytest.raises(ValueError, match="not valid YAML"):
        network_dir.load(copy)


def test_saving_params_of_another_config_is_refused(tmp_path, resnet_checkpoint):
    _, cfg, variables, _, _ = resnet_checkpoint
    other = models.NetworkConfig(resnet=ResNetConfig(num_blocks=2, filters=4, value_hidden=8, wdl_head=True))
    with pytest.raises(ValueError, match="do not fit"):
        network_dir.save(tmp_path / "bad", other, variables, game="connect_four")
    assert not (tmp_path / "bad").exists()
