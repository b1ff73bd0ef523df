"""Self-play throughput: positions generated per second, learner samples per second, ply-time split.

    .venv/bin/python bench/selfplay.py                 # chess_cpu preset + the reference configs
    .venv/bin/python bench/selfplay.py --only ref_2x32 --plies 5
    .venv/bin/python bench/selfplay.py --config configs/connect_four.yaml --set actors.games_per_actor=128

Reference config (the pgx AlphaZero example's): chess, 64 games in parallel, 32 Gumbel
simulations, ResNet 2x32 and 6x64, training batch 256. A ply is one batched search + one env step
of every game, measured as the self-play actor runs it (search, observation and targets to host,
step). The split: network = (simulations + 1) batched network calls, env = (simulations + 1)
batched env steps (one per simulation inside the search, one to play), tree = the rest of the ply.
The reference configs use the example's network (AlphaGo Zero's policy head: 1x1 conv to 2 planes,
dense to 4672; value hidden width = filters); `ref_2x32_chess_head` and `chess_cpu` use AlphaZero's
73-plane chess head instead.
The machine is shared, so the bench also times the pgx AlphaZero example's way under the same load
(search: stock `mctx.gumbel_muzero_policy` over the full 4672-action axis, same network and env;
learner: its Adam step on dense policy targets, same network) and reports our speed-ups over it
beside the absolute figures. Learner rates are the median of 3 rounds. Prints ONE JSON object
on stdout at the end; each phase's figures go to stderr as it finishes (one JSON line each), so a long
bench that is killed (a 19x256 network at 800 simulations) still leaves what it measured.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import games  # noqa: E402
import models  # noqa: E402
import search as search_lib  # noqa: E402
from configs import load  # noqa: E402
from games import material, packing, symmetry  # noqa: E402
from learner import init_train_state, make_train_step  # noqa: E402
from replay import TrainingBatch  # noqa: E402
from selfplay import SelfPlayConfig  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = ["game=chess", "actors.games_per_actor=64", "search.policy=gumbel",
             "search.num_simulations=32", "learner.batch_size=256",
             # the example's network: AlphaGo Zero's policy head (1x1 conv, dense to 4672), value hidden = filters
             "network.resnet.policy_head=dense"]
CONFIGS = {
    "chess_cpu": [],
    "ref_2x32": REFERENCE + ["network.resnet.num_blocks=2", "network.resnet.filters=32", "network.resnet.value_hidden=32"],
    # the same with AlphaZero's chess policy head (3x3 conv, 1x1 conv to 73 planes), as chess_cpu uses
    "ref_2x32_chess_head": REFERENCE + ["network.resnet.num_blocks=2", "network.resnet.filters=32",
                                        "network.resnet.value_hidden=32", "network.resnet.policy_head=conv"],
    "ref_6x64": REFERENCE + ["network.resnet.num_blocks=6", "network.resnet.filters=64", "network.resnet.value_hidden=64"],
}


def _timed(fn, repeats: int) -> float:
    """Mean seconds of fn() (already compiled), blocking on its result."""
    jax.block_until_ready(fn())
    t0 = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(fn())
    return (time.perf_counter() - t0) / repeats


def replay_shaped_batch(game, obs: np.ndarray, batch_size: int, packed: bool = False) -> TrainingBatch:
    """What ReplayBuffer.sample returns: observations tiled from `obs` (`packed`: bit-packed, as the
    replay buffer sends them; games/packing.py), 20 legal moves per position (every slot where the
    game has fewer, as connect four's 7)."""
    W, A = game.spec.max_legal_actions, game.spec.num_actions
    n = min(20, W)
    rng = np.random.default_rng(0)
    legal = np.full((batch_size, W), -1, np.int32)
    legal[:, :n] = np.sort(np.stack([rng.choice(A, n, replace=False) for _ in range(batch_size)]), axis=1)
    policy = np.zeros((batch_size, W), np.float32)
    policy[:, :n] = rng.dirichlet(np.ones(n), size=batch_size)
    observation = np.resize(obs, (batch_size, *obs.shape[1:]))
    return TrainingBatch(observation=packing.pack(observation) if packed else observation, legal_actions=legal,
                         policy=policy, z=rng.choice([-1.0, 0.0, 1.0], size=batch_size).astype(np.float32),
                         q=rng.uniform(-1.0, 1.0, size=batch_size).astype(np.float32))


def samples_per_second(step, state, batch_size: int, steps: int) -> float:
    """Median over 3 rounds of `steps` calls of state -> step(state) (one compile call first)."""
    state = step(state)
    jax.block_until_ready(state)
    rates = []
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(steps):
            state = step(state)
        jax.block_until_ready(state)
        rates.append(batch_size * steps / (time.perf_counter() - t0))
    return float(np.median(rates))


def progress(config: str, **figures) -> None:
    """One JSON line on stderr as a phase ends (stdout keeps the single final object)."""
    print(json.dumps({"config": config, **figures}), file=sys.stderr, flush=True)


def bench_config(name: str, overrides: list[str], plies: int, train_steps: int,
                 config: str = os.path.join(ROOT, "configs/chess_cpu.yaml")) -> dict:
    cfg = load(SelfPlayConfig, config, overrides)
    game = games.make(cfg.game)
    network = models.load_evaluation(cfg.network, game.spec, seed=1)
    evaluate, variables, net = network.evaluate, network.variables, network.module
    B = cfg.actors.games_per_actor
    states = jax.jit(game.init)(jax.random.split(jax.random.PRNGKey(0), B))
    search = searcher(game, evaluate, cfg.search)
    step = jax.jit(game.step)
    observe = jax.jit(lambda s: packing.pack(game.observe(s)))  # packed on the device, as the actor does

    # Advance 20 plies first so the timed positions are not all the opening.
    key = jax.random.PRNGKey(2)
    t_compile = time.perf_counter()
    for i in range(20):
        key, k = jax.random.split(key)
        out = search(variables, states, k)
        states = step(states, out.action)
    jax.block_until_ready(states)
    warmup_s = time.perf_counter() - t_compile
    progress(name, compile_and_warmup_s=round(warmup_s, 1))

    t0, root_visits = time.perf_counter(), []
    for i in range(plies):
        key, k = jax.random.split(key)
        out = search(variables, states, k)
        *_, visits, over = jax.device_get((
            observe(states), out.slot_actions, out.policy_target, out.child_q, out.root_value, out.action,
            out.visit_counts, game.terminal(states)))  # the targets to host, as the actor does (one transfer)
        root_visits.append(np.where(over, 0, visits.sum(axis=1)))
        states = step(states, out.action)
        jax.block_until_ready(states)
    ply_s = (time.perf_counter() - t0) / plies
    progress(name, positions_per_s=round(B / ply_s, 2), ply_s=round(ply_s, 4))

    sims = cfg.search.num_simulations
    apply = jax.jit(evaluate)
    obs = game.observe(states)
    network_s = _timed(lambda: apply(variables, obs), 5) * (sims + 1)
    env_s = _timed(lambda: step(states, out.action), 5) * (sims + 1)
    tree_s = max(ply_s - network_s - env_s, 0.0)

    # Learner: the jitted train step on a replay-shaped batch (host arrays, observations packed, as the
    # replay actor sends them: the step unpacks them on the device).
    batch = replay_shaped_batch(game, np.asarray(obs), cfg.learner.batch_size, packed=True)
    state = init_train_state(net, cfg.learner, obs[:1], jax.random.PRNGKey(3))
    train = make_train_step(net, cfg.learner, symmetry.of(cfg.game),
                            obs_spec=jax.ShapeDtypeStruct(obs.shape[1:], obs.dtype),
                            material_of=material.balance_of(cfg.game))
    LB = cfg.learner.batch_size
    learner_rate = samples_per_second(lambda s: train(s, batch)[0], state, LB, train_steps)

    result = {
        "games": B, "simulations": sims, "search_policy": cfg.search.policy,
        "network": f"resnet {cfg.network.resnet.num_blocks}x{cfg.network.resnet.filters}",
        "positions_per_s": round(B / ply_s, 2), "ply_s": round(ply_s, 4),
        "share_network": round(network_s / ply_s, 3), "share_env": round(env_s / ply_s, 3),
        "share_tree": round(tree_s / ply_s, 3),
        "network_plus_env_ceiling_positions_per_s": round(B / (network_s + env_s), 1),
        "learner_batch": LB, "learner_samples_per_s": round(learner_rate, 1),
        "compile_and_warmup_s": round(warmup_s, 1),
        # root visits per search of games in progress: num_simulations fresh, more with search.reuse_tree
        "root_visits_mean": round(float(np.mean([v[v > 0].mean() for v in root_visits if (v > 0).any()])), 1),
    }
    progress(name, **result)
    return result


def searcher(game, evaluate, search_cfg):
    """`fn(variables, states, key) -> SearchOutput` as the actor plays it: with `reuse_tree`, each
    call continues the last call's subtree of the move played (the actor's Reuse bookkeeping)."""
    if not search_cfg.reuse_tree:
        return search_lib.make_search(game, evaluate, search_cfg)
    search = search_lib.make_search(game, evaluate, search_cfg, return_tree=True)
    carried = [None]

    def run(variables, states, key):
        out, tree = search(variables, states, key, carried[0])
        played = out.slot_actions == out.action[:, None]
        carried[0] = search_lib.Reuse(tree, jnp.argmax(played, axis=1).astype(jnp.int32), played.any(axis=1))
        return out

    return run


def bench_pgx_example_baseline(overrides: list[str], plies: int) -> dict:
    """The pgx AlphaZero example's way, measured here under the same load: stock
    `mctx.gumbel_muzero_policy` over the full action axis (chess 4672), pgx env in the recurrent fn."""
    import mctx

    cfg = load(SelfPlayConfig, os.path.join(ROOT, "configs/chess_cpu.yaml"), overrides)
    game = games.make(cfg.game)
    network = models.load_evaluation(cfg.network, game.spec, seed=1)
    evaluate, variables = network.evaluate, network.variables
    B = cfg.actors.games_per_actor
    states = jax.jit(game.init)(jax.random.split(jax.random.PRNGKey(0), B))

    def recurrent_fn(params, key, action, state):
        mover = state.current_player
        state = game.step(state, action)
        out = evaluate(params, state.observation)
        logits = jnp.where(state.legal_action_mask, out.policy_logits, jnp.finfo(jnp.float32).min)
        reward = state.rewards[jnp.arange(B), mover]
        over = game.terminal(state)
        return mctx.RecurrentFnOutput(reward=reward, discount=jnp.where(over, 0.0, -1.0),
                                      prior_logits=logits, value=jnp.where(over, 0.0, out.value)), state

    @jax.jit
    def ply(params, state, key):
        out = evaluate(params, state.observation)
        root = mctx.RootFnOutput(prior_logits=out.policy_logits, value=out.value, embedding=state)
        policy = mctx.gumbel_muzero_policy(params, key, root, recurrent_fn, cfg.search.num_simulations,
                                           invalid_actions=~state.legal_action_mask)
        return game.step(state, policy.action), policy.action_weights

    key = jax.random.PRNGKey(2)
    for _ in range(3):
        key, k = jax.random.split(key)
        states, w = ply(variables, states, k)
    jax.block_until_ready(states)
    t0 = time.perf_counter()
    for _ in range(plies):
        key, k = jax.random.split(key)
        states, w = ply(variables, states, k)
        jax.device_get(w)
    jax.block_until_ready(states)
    ply_s = (time.perf_counter() - t0) / plies
    progress("pgx_example_way", positions_per_s=round(B / ply_s, 2), ply_s=round(ply_s, 4))
    return {"games": B, "simulations": cfg.search.num_simulations,
            "network": f"resnet {cfg.network.resnet.num_blocks}x{cfg.network.resnet.filters}",
            "positions_per_s": round(B / ply_s, 2), "ply_s": round(ply_s, 4)}


def bench_pgx_example_learner(overrides: list[str], steps: int) -> dict:
    """The pgx AlphaZero example's learner step, measured here under the same load: the same network,
    Adam (lr 1e-3), softmax cross entropy against a dense [B, 4672] policy target plus the L2 value
    loss, jitted without buffer donation, fed host arrays."""
    import optax

    cfg = load(SelfPlayConfig, os.path.join(ROOT, "configs/chess_cpu.yaml"), overrides)
    game = games.make(cfg.game)
    net = models.make_network(cfg.network, game.spec)
    LB = cfg.learner.batch_size
    obs = np.asarray(game.observe(jax.jit(game.init)(jax.random.split(jax.random.PRNGKey(0), 64))))
    slots = replay_shaped_batch(game, obs, LB)
    dense_policy = np.asarray(search_lib.scatter_slots(slots.policy, slots.legal_actions, game.spec.num_actions))
    batch = (slots.observation, dense_policy, slots.z)
    optimizer = optax.adam(1e-3)

    def loss_fn(params, batch_stats, obs, policy_target, value_target):
        out, updates = net.apply({"params": params, "batch_stats": batch_stats}, obs, train=True,
                                 mutable=["batch_stats"])
        policy_loss = optax.softmax_cross_entropy(out.policy_logits, policy_target).mean()
        value_loss = optax.l2_loss(out.value, value_target).mean()
        return policy_loss + value_loss, updates["batch_stats"]

    @jax.jit
    def train(params, batch_stats, opt_state, obs, policy_target, value_target):
        grads, batch_stats = jax.grad(loss_fn, has_aux=True)(params, batch_stats, obs, policy_target, value_target)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), batch_stats, opt_state

    variables = net.init(jax.random.PRNGKey(3), obs[:1], train=False)
    state = (variables["params"], variables["batch_stats"], optimizer.init(variables["params"]))
    rate = samples_per_second(lambda st: train(*st, *batch), state, LB, steps)
    return {"learner_batch": LB, "learner_samples_per_s": round(rate, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", choices=sorted(CONFIGS), action="append", help="run only these configs")
    p.add_argument("--plies", type=int, default=10, help="timed plies per config")
    p.add_argument("--train-steps", type=int, default=10, help="timed learner steps per config")
    p.add_argument("--no-baseline", action="store_true",
                   help="skip the pgx-example-style baseline (stock mctx over 4672 actions) measured alongside")
    p.add_argument("--config", help="bench this preset alone (any game), e.g. configs/connect_four.yaml; "
                   "no baseline")
    p.add_argument("--set", dest="overrides", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="dotted overrides of --config, e.g. actors.games_per_actor=128")
    args = p.parse_args()
    if args.config:
        try:
            load(SelfPlayConfig, args.config, args.overrides)  # a bad file, key or value: one line
        except ValueError as e:
            p.exit(2, f"bench/selfplay.py: {e}\n")
        name = os.path.splitext(os.path.basename(args.config))[0]
        results = {name: bench_config(name, args.overrides, args.plies, args.train_steps, args.config)}
    else:
        results = {name: bench_config(name, CONFIGS[name], args.plies, args.train_steps)
                   for name in (args.only or CONFIGS)}
    baseline = not (args.no_baseline or args.config)  # the baseline is chess's reference config
    if baseline:
        results["pgx_example_way_2x32_same_load"] = bench_pgx_example_baseline(CONFIGS["ref_2x32"], 3)
        ours = results.get("ref_2x32")
        if ours:
            results["speedup_vs_pgx_example_way_2x32"] = round(
                ours["positions_per_s"] / results["pgx_example_way_2x32_same_load"]["positions_per_s"], 2)
    for name in ("ref_2x32", "ref_6x64"):
        if name in results and baseline:
            theirs = bench_pgx_example_learner(CONFIGS[name], args.train_steps)
            results[f"pgx_example_learner_{name[4:]}_same_load"] = theirs
            results[f"learner_speedup_vs_pgx_example_{name[4:]}"] = round(
                results[name]["learner_samples_per_s"] / theirs["learner_samples_per_s"], 2)
    results["load_average_1min"] = os.getloadavg()[0]
    results["goal"] = {"pgx_example_positions_per_s": {"2x32": 26.6, "6x64": 23.5},
                       "pgx_example_learner_samples_per_s": {"2x32": 1615, "6x64": 320},
                       "target_positions_per_s_2x32": 66.5}
    results["device"] = str(jax.devices()[0])
    print(json.dumps(results))


if __name__ == "__main__":
    main()
