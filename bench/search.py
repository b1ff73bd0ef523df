"""Search speed: legal-slot tree (search/) vs the naive 4672-action mctx tree, PUCT and Gumbel.

    .venv/bin/python bench/search.py                 # the full grid (~10 min on 2 CPU cores)
    .venv/bin/python bench/search.py --quick         # batch 8 x {32, 128} only
    .venv/bin/python bench/search.py --startup       # what a process pays before its first searched move

Network: a 0.7M-parameter ResNet-like flax net defined here (4 residual blocks x 32 channels, an
AlphaZero-style conv + dense policy head over pgx's 4672 actions, untrained). Positions: chess
after 8 random plies. For each policy and batch x simulations it reports simulations per second
(batch x simulations / seconds per search, median of repeats, after compilation), compile
seconds, and peak tree bytes (the mctx.Tree the search allocates, embeddings included; plus
XLA's temp bytes for the whole search). The naive tree is mctx.muzero_policy /
gumbel_muzero_policy on pgx's full action axis with the pgx state as embedding and stock mctx
internals. `share_env_network` at 32 x 128: seconds of the same number of recurrent steps
(pgx step + network + slot tables) without any tree, over seconds per search.
Prints ONE JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import flax.linen as nn  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import mctx  # noqa: E402

import games  # noqa: E402
import search  # noqa: E402
from search import Node, SearchConfig, legal_slots, make_recurrent_fn, slots  # noqa: E402

GRID = [(8, 32), (8, 128), (8, 800), (64, 32), (64, 128)]
SHARE_AT = (32, 128)
# Naive runs skipped by default, with the reason (stock mctx cost grows ~ simulations^2).
NAIVE_SKIP = {
    (8, 800): "skipped: naive tree ~ simulations^2; at 8x128 it took ~11 s (2 shared cores, 2026-11-22), so 8x800 "
              "would take several minutes per search",
    (64, 128): "skipped: naive PUCT 32x128 took 74.7 s per search (2026-11-22); 64x128 would exceed "
               "the bench's 10-minute budget",
}


class ResBlock(nn.Module):
    channels: int

    @nn.compact
    def __call__(self, x):
        y = nn.relu(nn.LayerNorm()(nn.Conv(self.channels, (3, 3))(x)))
        y = nn.LayerNorm()(nn.Conv(self.channels, (3, 3))(y))
        return nn.relu(x + y)


class SmallResNet(nn.Module):
    """obs [B, 8, 8, 119] -> (policy logits [B, num_actions], value [B] in [-1, 1])."""

    num_actions: int
    blocks: int = 4
    channels: int = 32

    @nn.compact
    def __call__(self, obs):
        x = nn.relu(nn.Conv(self.channels, (3, 3))(obs.astype(jnp.float32)))
        for _ in range(self.blocks):
            x = ResBlock(self.channels)(x)
        p = nn.relu(nn.Conv(2, (1, 1))(x)).reshape(x.shape[0], -1)
        v = nn.relu(nn.Conv(1, (1, 1))(x)).reshape(x.shape[0], -1)
        v = nn.tanh(nn.Dense(1)(nn.relu(nn.Dense(32)(v))))[:, 0]
        return nn.Dense(self.num_actions)(p), v


def network(game):
    net = SmallResNet(game.num_actions)
    params = net.init(jax.random.PRNGKey(0), jnp.zeros((1,) + game.observation_shape))
    return net.apply, params


def positions(game, batch, plies=8, seed=0):
    states = game.init(jax.random.split(jax.random.PRNGKey(seed), batch))
    key = jax.random.PRNGKey(seed + 1)
    for _ in range(plies):
        key, sub = jax.random.split(key)
        states = game.step(states, jax.random.categorical(
            sub, jnp.where(game.legal_mask(states), 0.0, -jnp.inf)))
    return states


# --------------------------------------------------------------------------------------------
# The naive baseline: stock mctx on the full action axis, pgx state as embedding.
# --------------------------------------------------------------------------------------------
def naive_search(game, apply_fn, config: SearchConfig, return_tree=False):
    def recurrent_fn(params, rng_key, action, state):
        rows = jnp.arange(action.shape[0])
        mover = state.current_player
        state = game.step(state, action)
        logits, value = apply_fn(params, state.observation)
        over = game.terminal(state)
        logits = logits - jnp.max(logits, axis=-1, keepdims=True)
        logits = jnp.where(game.legal_mask(state), logits, jnp.finfo(logits.dtype).min)
        return mctx.RecurrentFnOutput(
            reward=state.rewards[rows, mover], discount=jnp.where(over, 0.0, -1.0),
            prior_logits=logits, value=jnp.where(over, 0.0, value)), state

    def run(params, states, key):
        logits, value = apply_fn(params, states.observation)
        root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=states)
        invalid = ~game.legal_mask(states)
        if config.policy == "puct":
            out = mctx.muzero_policy(
                params, key, root, recurrent_fn, config.num_simulations, invalid_actions=invalid,
                dirichlet_alpha=0.3, pb_c_base=config.pb_c_base, pb_c_init=config.pb_c_init)
        else:
            out = mctx.gumbel_muzero_policy(
                params, key, root, recurrent_fn, config.num_simulations, invalid_actions=invalid,
                max_num_considered_actions=config.max_num_considered_actions)
        return (out.action, out.search_tree) if return_tree else out.action

    return run


# --------------------------------------------------------------------------------------------
def _tree_bytes(tree_fn, *args) -> int:
    """Bytes of the mctx.Tree that tree_fn(*args) builds (all its arrays, embeddings included)."""
    shapes = jax.eval_shape(tree_fn, *args)
    return int(sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(shapes)))


def _time(compiled, args, budget_s: float, max_repeats: int) -> float:
    """Median seconds per call over up to max_repeats calls within ~budget_s."""
    times = []
    while len(times) < max_repeats and (not times or sum(times) < budget_s):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(make_fn, make_tree_fn, params, states, key, sims, budget_s, repeats):
    fn = jax.jit(make_fn)
    t0 = time.perf_counter()
    compiled = fn.lower(params, states, key).compile()
    compile_s = time.perf_counter() - t0
    seconds = _time(compiled, (params, states, key), budget_s, repeats)
    memory = compiled.memory_analysis()
    batch = states.current_player.shape[0]
    return {
        "seconds_per_search": round(seconds, 4),
        "sims_per_s": round(batch * sims / seconds, 1),
        "ms_per_simulation_step": round(1000 * seconds / sims, 3),
        "compile_s": round(compile_s, 2),
        "peak_tree_bytes": _tree_bytes(make_tree_fn, params, states, key),
        "xla_temp_bytes": int(getattr(memory, "temp_size_in_bytes", 0)) if memory else None,
    }


def env_network_seconds(game, apply_fn, params, states, sims, naive=False, repeats=3) -> float:
    """Seconds for `sims` recurrent steps on B states without any tree, walking down random lines
    from the root: pgx step + network, plus slot table and slot priors for the slot tree."""
    recurrent = make_recurrent_fn(game, apply_fn)
    restart = lambda over: lambda r, c: jnp.where(over.reshape((-1,) + (1,) * (r.ndim - 1)), r, c)

    def slot_step(params, key, node, acc):
        filled = jnp.sum(node.slot_actions != slots.EMPTY, axis=1)
        slot = jax.random.randint(key, filled.shape, 0, jnp.maximum(filled, 1))
        out, child = recurrent(params, key, slot, node)
        return child, out.discount == 0, acc + out.value.sum() + out.prior_logits[:, 0].sum()

    def naive_step(params, key, state, acc):  # what the naive recurrent fn does per simulation
        action = jax.random.categorical(key, jnp.where(game.legal_mask(state), 0.0, -jnp.inf))
        state = game.step(state, action)
        logits, value = apply_fn(params, state.observation)
        logits = jnp.where(game.legal_mask(state), logits, jnp.finfo(logits.dtype).min)
        return state, game.terminal(state), acc + value.sum() + logits[:, 0].sum()

    def run(params, states, key):
        logits, value = apply_fn(params, states.observation)
        if naive:
            root, step = states, naive_step
            acc = value.sum() + logits.sum()
        else:
            root, step = Node(search.game_search._slim(states), legal_slots(game, states)), slot_step
            acc = value.sum() + slots.prior_logits(logits, root.slot_actions).sum()

        def body(i, carry):
            node, acc = carry
            child, over, acc = step(params, jax.random.fold_in(key, i), node, acc)
            return jax.tree.map(restart(over), root, child), acc

        return jax.lax.fori_loop(0, sims, body, (root, acc))[1]

    compiled = jax.jit(run).lower(params, states, jax.random.PRNGKey(0)).compile()
    return _time(compiled, (params, states, jax.random.PRNGKey(0)), 60.0, repeats)


def startup(net_dir: str, simulations: list[int]) -> dict:
    """Seconds to trace, lower and compile (or load from JAX's persistent cache) each of several searches
    a process builds in turn: a shipped network with its recorded play search, one position, as `uci.py`
    and `match.py` build theirs. The first pays for tracing the rules; the later ones show what is shared."""
    import arena
    import models
    from runtime.jax_cache import enable_compilation_cache
    cache_dir = enable_compilation_cache()
    game, net = games.make("chess"), models.load_evaluation(net_dir)
    states = game.init(jax.random.split(jax.random.PRNGKey(0), 1))
    cells = []
    for sims in simulations:
        config = arena.search_config(net.metadata, {"num_simulations": sims})
        fn = search.make_search(game, net.evaluate, config)
        t0 = time.perf_counter()
        traced = fn.trace(net.variables, states, jax.random.PRNGKey(1))
        t1 = time.perf_counter()
        lowered = traced.lower()
        t2 = time.perf_counter()
        lowered.compile()
        t3 = time.perf_counter()
        cells.append({"simulations": sims, "policy": config.policy, "win_check": config.win_check,
                      "trace_s": round(t1 - t0, 2), "lower_s": round(t2 - t1, 2), "compile_s": round(t3 - t2, 2)})
    return {"bench": "search_startup", "network": net_dir, "device": jax.devices()[0].device_kind,
            "cpu_count": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 2),
            "compilation_cache": cache_dir, "searches_in_order": cells}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="batch 8 x {32, 128} only")
    parser.add_argument("--policies", default="puct,gumbel")
    parser.add_argument("--naive-all", action="store_true", help="also run the slow naive cells")
    parser.add_argument("--repeats", type=int, default=3, help="timed searches per cell (max)")
    parser.add_argument("--startup", action="store_true", help="only the seconds before each search's first move")
    parser.add_argument("--net", default="networks/chess_distilled_4x64", help="--startup's network directory")
    args = parser.parse_args(argv)
    if args.startup:
        print(json.dumps(startup(args.net, [32, 64, 400])))
        return

    game = games.make("chess")
    apply_fn, params = network(game)
    grid = [(8, 32), (8, 128)] if args.quick else GRID
    key = jax.random.PRNGKey(42)
    started = time.perf_counter()
    result = {
        "bench": "search",
        "device": jax.devices()[0].device_kind,
        "cpu_count": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "network": {"kind": "SmallResNet 4 blocks x 32 channels, conv+dense policy head",
                    "params": int(sum(x.size for x in jax.tree.leaves(params)))},
        "slot_width": game.spec.max_legal_actions,
        "naive_width": game.num_actions,
    }
    for policy in args.policies.split(","):
        per_policy = {}
        for batch, sims in grid:
            cell = f"{batch}x{sims}"
            states = positions(game, batch)
            config = SearchConfig(policy=policy, num_simulations=sims)
            ours_fn = search.make_search(game, apply_fn, config)
            tree_fn = lambda *a, f=search.make_search_tree(game, apply_fn, config): f(*a)[0]
            budget = 10.0  # seconds of timed repeats per cell (at least one)
            entry = {"slots": measure(ours_fn, tree_fn, params, states, key, sims, budget, args.repeats)}
            if cell in {f"{b}x{s}" for b, s in NAIVE_SKIP} and not args.naive_all:
                entry["naive"] = {"skipped": NAIVE_SKIP[(batch, sims)]}
            else:
                naive = naive_search(game, apply_fn, config)
                naive_tree = lambda *a, f=naive_search(game, apply_fn, config, True): f(*a)[1]
                entry["naive"] = measure(naive, naive_tree, params, states, key, sims, budget,
                                         max(1, args.repeats // 2))
                entry["speedup_vs_naive"] = round(
                    entry["slots"]["sims_per_s"] / entry["naive"]["sims_per_s"], 2)
            per_policy[cell] = entry
            print(f"[{time.perf_counter() - started:6.0f}s] {policy} {cell}: {json.dumps(entry)}",
                  file=sys.stderr, flush=True)
        if not args.quick:
            cost = lambda cell: per_policy[cell]["slots"]["ms_per_simulation_step"]
            per_policy["per_simulation_cost_ratio"] = {  # 1.0 = flat in the number of simulations
                "8x800_over_8x32": round(cost("8x800") / cost("8x32"), 2),
                "8x128_over_8x32": round(cost("8x128") / cost("8x32"), 2)}
        result[policy] = per_policy

    # Share of search time spent in the network + pgx steps at 32 x 128 (PUCT).
    batch, sims = SHARE_AT
    states = positions(game, batch)
    config = SearchConfig(policy="puct", num_simulations=sims)
    whole = measure(search.make_search(game, apply_fn, config),
                    lambda *a, f=search.make_search_tree(game, apply_fn, config): f(*a)[0],
                    params, states, key, sims, 30.0, 3)
    env_net = env_network_seconds(game, apply_fn, params, states, sims)
    result["share_env_network"] = {
        f"{batch}x{sims}": {"puct_slots": round(env_net / whole["seconds_per_search"], 3),
                            "env_network_seconds": round(env_net, 4),
                            "search_seconds": whole["seconds_per_search"]}}
    if "8x128" in result.get("puct", {}) and "seconds_per_search" in result["puct"]["8x128"]["naive"]:
        states8 = positions(game, 8)
        env8 = env_network_seconds(game, apply_fn, params, states8, 128)
        env8_naive = env_network_seconds(game, apply_fn, params, states8, 128, naive=True)
        result["share_env_network"]["8x128"] = {
            "puct_slots": round(env8 / result["puct"]["8x128"]["slots"]["seconds_per_search"], 3),
            "puct_naive": round(env8_naive / result["puct"]["8x128"]["naive"]["seconds_per_search"], 3)}
    result["total_seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
