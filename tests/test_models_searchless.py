"""Searchless transformer: context lengths, outputs per predictor, log-softmax, jit + grad."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from models.searchless import SearchlessConfig, SearchlessTransformer

TINY = dict(num_layers=1, num_heads=2, embedding_dim=16)


@pytest.mark.parametrize("predictor,length,context,outputs", [
    ("action_value", 78, 79, 128), ("state_value", 77, 78, 128), ("behavioral_cloning", 77, 78, 1968)])
def test_shapes_per_predictor(predictor, length, context, outputs):
    cfg = SearchlessConfig(predictor=predictor, **TINY)
    assert (cfg.input_length, cfg.context_length, cfg.output_size) == (length, context, outputs)
    net = SearchlessTransformer(cfg)
    tokens = jax.random.randint(jax.random.PRNGKey(0), (3, length), 0, 32)
    variables = net.init(jax.random.PRNGKey(1), tokens)
    logp = net.apply(variables, tokens)
    assert logp.shape == (3, outputs)
    np.testing.assert_allclose(np.exp(np.asarray(logp)).sum(-1), 1.0, rtol=1e-5)
    assert variables["params"]["position_embedding"]["embedding"].shape == (79, 16)


def test_every_token_matters_without_causal_mask():
    """Changing the first FEN token changes the output, and so does the action token (AV)."""
    net = SearchlessTransformer(SearchlessConfig(**TINY))
    tokens = jax.random.randint(jax.random.PRNGKey(0), (1, 78), 0, 32)
    variables = net.init(jax.random.PRNGKey(1), tokens)
    base = net.apply(variables, tokens)
    for position in (0, 77):
        other = net.apply(variables, tokens.at[0, position].set((tokens[0, position] + 1) % 32))
        assert float(jnp.max(jnp.abs(other - base))) > 1e-6


def test_wrong_input_length_is_a_clear_error():
    net = SearchlessTransformer(SearchlessConfig(**TINY))
    with pytest.raises(ValueError, match=r"\[B, 78\]"):
        net.init(jax.random.PRNGKey(0), jnp.zeros((2, 77), jnp.int32))


def test_jit_and_grad():
    net = SearchlessTransformer(SearchlessConfig(predictor="behavioral_cloning", **TINY))
    tokens = jax.random.randint(jax.random.PRNGKey(0), (4, 77), 0, 32)
    targets = jnp.array([0, 5, 1967, 40])
    params = net.init(jax.random.PRNGKey(1), tokens)

    @jax.jit
    def loss(p):
        logp = net.apply(p, tokens)
        return -jnp.mean(jnp.take_along_axis(logp, targets[:, None], axis=1))

    value, grads = jax.value_and_grad(loss)(params)
    assert np.isfinite(float(value))
    assert all(bool(jnp.all(jnp.isfinite(g))) for g in jax.tree.leaves(grads))
    assert float(jnp.abs(grads["params"]["token_embedding"]["embedding"]).sum()) > 0


def test_bfloat16_compute_matches_float32_within_rounding():
    tokens = jax.random.randint(jax.random.PRNGKey(0), (4, 78), 0, 32)
    nets = {dt: SearchlessTransformer(SearchlessConfig(predictor="action_value", compute_dtype=dt, **TINY))
            for dt in ("float32", "bfloat16")}
    params = nets["float32"].init(jax.random.PRNGKey(1), tokens)
    full, half = (nets[dt].apply(params, tokens) for dt in ("float32", "bfloat16"))
    assert half.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(half), np.asarray(full), atol=0.1)
    matmuls = [e for e in jax.make_jaxpr(lambda t: nets["bfloat16"].apply(params, t))(tokens).jaxpr.eqns
               if e.primitive.name == "dot_general"]
    assert matmuls and all(e.outvars[0].aval.dtype == jnp.bfloat16 for e in matmuls[:-1])
