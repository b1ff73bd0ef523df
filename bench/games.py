"""Vmapped environment throughput: env steps/s and jit compile time per game and batch size.

Each measured call plays `steps` plies of random legal moves for the whole batch inside one
jitted `lax.scan` (finished games restart, as in self-play). Prints one JSON object.

    .venv/bin/python bench/games.py [--games chess connect_four] [--batches 64 256 1024]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

# Run as a script, this file's folder comes first on sys.path and its name would shadow the
# `games` package: put the repository root there instead.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.dirname(_HERE)] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import games  # noqa: E402

# Plies per timed call: enough for a few seconds of chess on a CPU, more for cheap games.
STEPS = {"chess": 16, "connect_four": 128}


def _player(game, steps):
    def reset_finished(states, fresh):
        done = game.terminal(states)
        pick = lambda new, old: jnp.where(done.reshape(done.shape + (1,) * (old.ndim - 1)), new, old)  # noqa: E731
        return jax.tree.map(pick, fresh, states)

    def play(states, key):
        fresh = game.init(jax.random.split(jax.random.fold_in(key, 1), game.legal_mask(states).shape[0]))

        def ply(states, key):
            logits = jnp.where(game.legal_mask(states), 0.0, -jnp.inf)
            actions = jax.random.categorical(key, logits)
            return reset_finished(game.step(states, actions), fresh), None

        states, _ = jax.lax.scan(ply, states, jax.random.split(key, steps))
        return states

    return jax.jit(play)


def measure(name: str, batch: int, repeats: int = 3) -> dict:
    game = games.make(name)
    steps = STEPS.get(name, 64)
    states = jax.jit(game.init)(jax.random.split(jax.random.PRNGKey(0), batch))
    play = _player(game, steps)
    key = jax.random.PRNGKey(1)
    start = time.perf_counter()
    compiled = play.lower(states, key).compile()
    compile_s = time.perf_counter() - start
    states = jax.block_until_ready(compiled(states, key))  # warm-up
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        states = jax.block_until_ready(compiled(states, jax.random.PRNGKey(i + 2)))
        times.append(time.perf_counter() - start)
    best = min(times)
    return {"steps_per_s": round(batch * steps / best, 1), "compile_s": round(compile_s, 2),
            "plies_per_call": steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", default=["chess", "connect_four"])
    parser.add_argument("--batches", nargs="+", type=int, default=[64, 256, 1024])
    args = parser.parse_args()
    for name in args.games:
        games.make(name)  # unknown names fail before any work
    # Compile times are the point here, so the persistent compilation cache stays off.
    jax.config.update("jax_enable_compilation_cache", False)
    results = {name: {str(b): measure(name, b) for b in args.batches} for name in args.games}
    device = jax.devices()[0]
    print(json.dumps({
        "bench": "games",
        "device": f"{device.platform}:{getattr(device, 'device_kind', '')}",
        "cpu_count": os.cpu_count(),
        "jax": jax.__version__,
        "python": platform.python_version(),
        "results": results,
    }))


if __name__ == "__main__":
    main()
