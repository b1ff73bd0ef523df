"""Presets: parameter counts against the papers and a closed-form count; configs round-trip."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games
import models
from configs.loader import apply_overrides, from_dict, to_dict
from models import presets
from models.network import NetworkConfig


def count_params(name: str) -> int:
    """Parameters of a preset on its native input, traced with eval_shape (no memory allocated)."""
    cfg = presets.get(name)
    if cfg.family == "resnet":
        spec = games.make("chess").spec
        net, x = models.make_network(cfg, spec), jax.ShapeDtypeStruct((1, *spec.observation_shape), jnp.float32)
        kwargs = {}
    elif cfg.family == "searchless":
        net, x = models.make_student(cfg), jax.ShapeDtypeStruct((1, cfg.searchless.input_length), jnp.int32)
        kwargs = {}
    else:
        net = models.make_student(cfg)
        x = jax.ShapeDtypeStruct((1, 64, cfg.chessformer.input_features), jnp.float32)
        kwargs = {"return_pairs": True}
    shapes = jax.eval_shape(lambda x: net.init(jax.random.PRNGKey(0), x, **kwargs), x)
    return sum(int(np.prod(s.shape)) for s in jax.tree.leaves(shapes["params"]))


def searchless_formula(c) -> int:
    d = c.embedding_dim
    per_layer = 4 * d * d + 3 * d * c.widening_factor * d + 2 * 2 * d  # attention, SwiGLU, 2 LayerNorms
    return c.vocab_size * d + c.max_sequence_length * d + c.num_layers * per_layer + 2 * d + d * c.output_size + c.output_size


def chessformer_formula(c) -> int:
    d, h, m = c.embedding_dim, c.num_heads, c.mlp_dim
    per_layer = (4 * d * d + 4 * d) + (2 * d * m + m + d) + 4 * d
    if c.position_encoding == "gab":
        first = d * c.gab_d2 + c.gab_d2 if c.gab_pooled else d * c.gab_d1 + 64 * c.gab_d1 * c.gab_d2 + c.gab_d2
        per_layer += first + 2 * c.gab_d2 + (c.gab_d2 + 1) * h * c.gab_d3 + 2 * h * c.gab_d3
    elif c.position_encoding == "relative_2d":
        per_layer += h * 15 * 15
    p = c.policy_dim or d
    total = c.input_features * d + d + c.num_layers * per_layer
    total += 2 * (d * p + p) + 3 * p + 3  # attention policy: query, key, promotion offsets
    total += 2 * d + d * c.value_hidden + c.value_hidden + 3 * c.value_hidden + 3  # WDL head
    if c.position_encoding == "gab":
        total += c.gab_d3 * 4096 + 4096  # the shared bias projection
    if c.position_encoding == "absolute":
        total += 64 * d
    return total


@pytest.mark.parametrize("name,paper", [
    ("searchless_9m", 9e6), ("searchless_136m", 136e6), ("searchless_270m", 270e6),
    ("chessformer_4m", 4.01e6), ("chessformer_2_5m", 2.51e6)])
def test_parameter_counts_match_the_papers(name, paper):
    n = count_params(name)
    assert abs(n - paper) / paper < 0.10, f"{name}: {n:,} parameters vs {paper:,.0f} in the paper"


@pytest.mark.parametrize("name", [n for n in presets.names() if not n.startswith("resnet") and n != "az_paper"])
def test_parameter_counts_match_the_closed_form(name):
    cfg = presets.get(name)
    formula = searchless_formula(cfg.searchless) if cfg.family == "searchless" else chessformer_formula(cfg.chessformer)
    assert count_params(name) == formula


def test_chessformer_191m_as_built_from_the_paper():
    """The paper leaves the 191M model's GAB/head details open; built from what it states the count
    is 149.4M (see docs/models.md). Pin it so a change is deliberate."""
    assert count_params("chessformer_191m") == chessformer_formula(presets.get("chessformer_191m").chessformer)
    assert 140e6 < count_params("chessformer_191m") < 160e6


def test_az_paper_is_19_blocks_of_256_filters():
    cfg = presets.get("az_paper")
    assert (cfg.resnet.num_blocks, cfg.resnet.filters) == (19, 256)
    # 19 blocks x 2 convs x 3x3x256x256 dominate the count
    assert count_params("az_paper") > 19 * 2 * 9 * 256 * 256


def test_configs_round_trip_and_switch_family_by_one_key():
    for name in presets.names():
        cfg = presets.get(name)
        assert from_dict(NetworkConfig, to_dict(cfg)) == cfg
    switched = apply_overrides(NetworkConfig(), ["family=chessformer", "chessformer.num_layers=2"])
    assert switched.family == "chessformer" and switched.chessformer.num_layers == 2
    assert presets.get("searchless_9m", predictor="behavioral_cloning").searchless.output_size == 1968
    with pytest.raises(ValueError, match="unknown network preset"):
        presets.get("gpt5")


def test_searchless_is_not_a_self_play_network():
    with pytest.raises(ValueError, match="FEN tokens"):
        models.make_network(presets.get("searchless_9m"), games.make("chess").spec)
    with pytest.raises(ValueError, match="chess only"):
        models.make_network(presets.get("chessformer_4m"), games.make("go_9x9").spec)
