"""Activations written for XLA:CPU's elementwise cost."""
from __future__ import annotations

import jax
import jax.numpy as jnp

# Above this input tanh(softplus(x)) is 1 in float32; clamping keeps exp(x)^2 finite.
_MISH_CLAMP = 20.0


def mish(x: jax.Array) -> jax.Array:
    """x * tanh(softplus(x)) (Misra 2019) with one exp instead of exp, log1p and tanh.

    With n = e^x (e^x + 2), tanh(log(1 + e^x)) = n / (n + 2). Equal to `jax.nn.mish` within 3e-6
    in value and 1e-5 in gradient (tests/test_models_chessformer.py); cheaper than jax.nn.mish on a CPU, where the
    activation is a visible share of the Chessformer's step.
    """
    e = jnp.exp(jnp.minimum(x, _MISH_CLAMP))
    n = e * (e + 2.0)
    return x * (n / (n + 2.0))
