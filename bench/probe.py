"""The probe set (arena/batched/probe.py) for networks and the searches they can play with, as JSON.

    .venv/bin/python bench/probe.py --net networks/chess_cpu_60min                # recorded search only
    .venv/bin/python bench/probe.py --net A --net B --sims 64 --grid              # every Q transform
    .venv/bin/python bench/probe.py --net A --search "policy=puct,q_transform=fpu" --sims 400
    .venv/bin/python bench/probe.py --net A --net B --no-search                  # policy, value, one ply
    .venv/bin/python bench/probe.py --net A --sims 16 --targets                  # self-play's policy targets

For each network: its raw policy's and its value head's figures, its prior's entropy and top
probability (`prior_shape`), its value's one-ply move (the move whose successor the value rates worst
for the opponent: what a search reads of the value one ply down, where a hung piece shows), its
value's side-to-move offset (`value_offset`), then each search's agreement with
Stockfish's best move and its regret (win% lost per move), each search as the arena plays it
(`SearchConfig.for_play` over the network's recorded search, then the variant's keys). `--grid`
measures the Q transforms and value scales that decide whether a search keeps what the prior knows
(docs/experiments/). `--targets` reads each search as self-play runs it (root noise on) for its policy
targets, the distribution the learner trains the policy on, beside the prior they start from. One
JSON object, with the load average and the seconds of each search.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import types
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GRID = {  # name -> SearchConfig keys over the recorded search
    "recorded": {},
    "puct_siblings": {"policy": "puct", "q_transform": "parent_and_siblings"},
    "puct_fpu": {"policy": "puct", "q_transform": "fpu"},
    "puct_min_max": {"policy": "puct", "q_transform": "min_max"},
    "gumbel_0.1": {"policy": "gumbel", "value_scale": 0.1},
    "gumbel_0.03": {"policy": "gumbel", "value_scale": 0.03},
    "gumbel_0.01": {"policy": "gumbel", "value_scale": 0.01},
}


def parse_keys(text: str) -> dict:
    """'policy=puct,q_transform=fpu' -> SearchConfig keys (numbers as numbers)."""
    import yaml
    out = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--search: '{item}' is not key=value")
        out[key.strip()] = yaml.safe_load(value)
    return out


def successors(game, states, actions):
    """The pgx states [B * W] after each move of `actions` [B, W] (pgx ids >= 0) from `states` [B]."""
    import jax
    import jax.numpy as jnp
    width = actions.shape[1]
    return game.step(jax.tree.map(lambda x: jnp.repeat(x, width, axis=0), states), actions.reshape(-1))


def value_one_ply(game, apply, width: int):
    """(variables) -> a batched mover (arena/batched/probe.py's BatchMover) that plays the move whose
    successor the value head rates worst for the side to move there; a move that ends the game scores
    its reward. `width` >= the most legal moves of a position (the probe set's)."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def choose(variables, states):
        batch = states.legal_action_mask.shape[0]
        _, actions = jax.lax.top_k(states.legal_action_mask.astype(jnp.int32), width)  # [B, W] legal first
        legal = jnp.take_along_axis(states.legal_action_mask, actions, axis=1)
        children = successors(game, states, actions)
        value = apply(variables, game.observe(children)).value.reshape(batch, width)  # for the opponent
        mover = jnp.repeat(states.current_player, width)[:, None]
        reward = jnp.take_along_axis(game.rewards(children), mover, axis=1).reshape(batch, width)
        q = jnp.where(game.terminal(children).reshape(batch, width), reward, -value)
        best = jnp.argmax(jnp.where(legal, q, -jnp.inf), axis=1)
        return jnp.take_along_axis(actions, best[:, None], axis=1)[:, 0]

    return lambda variables: (lambda states, key: choose(variables, states))


def value_offset(probe, game, apply, variables, batch_size: int = 32) -> dict:
    """The value against Stockfish's over the probe's positions and each successor that does not end
    the game, both for the side to move in [-1, 1]: v = intercept + slope * sf by least squares. The
    intercept is the side-to-move offset (distill/calibrate.py) that a search's negamax turns into a
    bonus every second ply; 0 for a value consistent with itself one ply down."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from arena import probe as probe_lib

    @jax.jit
    def children(variables, states, actions):  # actions [B, W] (-1: no move)
        b, w = actions.shape
        kids = successors(game, states, jnp.maximum(actions, 0))
        return apply(variables, game.observe(kids)).value.reshape(b, w), game.terminal(kids).reshape(b, w)

    _, roots = probe_lib.network_outputs(probe, apply, variables)
    net, ref = [np.asarray(roots, np.float64)], [2 * probe.best - 1]
    for start in range(0, len(probe), batch_size):
        rows = np.resize(np.arange(start, min(start + batch_size, len(probe))), batch_size)  # one shape
        states = jax.tree.map(lambda x: x[rows], probe.states)
        v, ended = jax.device_get(children(variables, states, jnp.asarray(probe.actions[rows])))
        keep = (probe.actions[rows] >= 0) & ~ended
        keep[min(batch_size, len(probe) - start):] = False  # the padding repeats rows
        net.append(v[keep])
        ref.append(1 - 2 * probe.values[rows][keep])
    net, ref = np.concatenate(net), np.concatenate(ref)
    slope, intercept = np.polyfit(ref, net, 1)
    return {"intercept": float(intercept), "slope": float(slope), "boards": len(net),
            "correlation": float(np.corrcoef(ref, net)[0, 1])}


def prior_shape(probe, apply, variables, batch_size: int = 32) -> dict:
    """The raw prior over each probe position's legal moves: its mean entropy (nats) and mean top
    probability, each with its 95% interval. PUCT spends its simulations by the prior, so a prior that
    training sharpened costs a search even where its first move got better (docs/experiments/)."""
    import jax
    import jax.numpy as jnp

    from arena import probe as probe_lib

    @jax.jit
    def shape(variables, states):
        logits = jnp.where(states.legal_action_mask, apply(variables, states.observation).policy_logits, -jnp.inf)
        p = jax.nn.softmax(logits, axis=-1)
        entropy = -jnp.sum(jnp.where(p > 0, p * jnp.log(jnp.where(p > 0, p, 1.0)), 0.0), axis=-1)
        return entropy, jnp.max(p, axis=-1)

    entropy, top = np.zeros(len(probe)), np.zeros(len(probe))
    for rows, states in probe_lib.batches(probe, batch_size):
        e, t = jax.device_get(shape(variables, states))
        entropy[rows], top[rows] = e[:len(rows)], t[:len(rows)]
    (e, e_lo, e_hi), (t, t_lo, t_hi) = probe_lib.mean_interval(entropy), probe_lib.mean_interval(top)
    return {"entropy": e, "entropy_lower": e_lo, "entropy_upper": e_hi, "top": t, "top_lower": t_lo, "top_upper": t_hi}


def expected_score(probe, slot_actions: np.ndarray, weights: np.ndarray) -> dict:
    """A distribution over each position's moves (`weights` [N, S] on the pgx ids `slot_actions` [N, S],
    -1 an empty slot) against Stockfish's: the expected agreement and regret (win% lost) of a move drawn
    from it, each with its 95% interval over positions. The uniform distribution is the random mover."""
    from arena import probe as probe_lib
    slots = np.asarray(slot_actions)
    match = (slots[:, :, None] == probe.actions[:, None, :]) & (slots >= 0)[:, :, None]  # [N, S, W]
    value = np.where(match, probe.values[:, None, :], -np.inf).max(axis=2)  # [N, S] win prob per slot
    w = np.where(slots >= 0, np.asarray(weights, np.float64), 0.0)
    w = w / w.sum(axis=1, keepdims=True)
    if not np.isfinite(value[w > 0]).all():
        raise ValueError("a weighted move is not among its probe position's legal moves")
    best = probe.best[:, None]
    agree = (w * (value >= best - probe_lib.TIE)).sum(axis=1)
    regret = 100 * (w * np.where(w > 0, best - value, 0.0)).sum(axis=1)
    (a, a_lo, a_hi), (r, r_lo, r_hi) = probe_lib.mean_interval(agree), probe_lib.mean_interval(regret)
    return {"agreement": a, "agreement_lower": a_lo, "agreement_upper": a_hi,
            "regret": r, "regret_lower": r_lo, "regret_upper": r_hi}


def target_scores(probe, search_fn, variables) -> dict:
    """A self-play search's policy targets and the prior they start from, each as a distribution over
    the moves (expected_score), with the targets' entropy and KL(target || prior) in nats: whether
    the search has anything to teach the policy it trains."""
    import jax

    from arena import probe as probe_lib
    outs = []

    def record(states, key):
        out = jax.device_get(search_fn(variables, states, key))
        outs.append((out.slot_actions, out.policy_target, out.prior_logits))
        return np.asarray(out.action)

    probe_lib.mover_actions(probe, record, batch_size=32)
    slots, target, logits = (np.concatenate(x)[:len(probe)] for x in zip(*outs))
    live = slots >= 0
    logits = np.where(live, logits, -np.inf)
    prior = np.exp(logits - logits.max(axis=1, keepdims=True))
    prior /= prior.sum(axis=1, keepdims=True)
    t = np.where(live, target, 0.0)
    keep = t.sum(axis=1) > 0  # a root the search found decided (or too few simulations) has no target
    rows = types.SimpleNamespace(actions=probe.actions[keep], values=probe.values[keep], best=probe.best[keep])
    slots, t, prior = slots[keep], t[keep] / t[keep].sum(axis=1, keepdims=True), prior[keep]
    logs = lambda x: np.log(np.where(t > 0, x, 1.0))  # noqa: E731
    return {"target": expected_score(rows, slots, t), "prior": expected_score(rows, slots, prior),
            "positions": int(keep.sum()), "target_entropy": float(-(t * logs(t)).sum(axis=1).mean()),
            "kl_target_prior": float((t * (logs(t) - logs(prior))).sum(axis=1).mean())}


def measure(net_dir: str, variants: dict, sims: int, limit: int | None, probe, targets: bool = False) -> dict:
    import dataclasses

    import games
    import models
    import search as search_lib
    from arena import probe as probe_lib
    from arena import search_config
    network = models.load_evaluation(net_dir)
    apply = network.evaluate
    report = probe_lib.probe_network(probe, apply, network.variables)
    out = {"net": net_dir, "policy": dataclasses.asdict(report.policy), "value": dataclasses.asdict(report.value),
           "random": dataclasses.asdict(report.random), "searches": {}}
    game = games.make("chess")
    one_ply = probe.score(probe_lib.mover_actions(probe, value_one_ply(game, apply, probe.actions.shape[1])(
        network.variables), batch_size=32))
    out["value_one_ply"] = dataclasses.asdict(one_ply)
    print(f"{net_dir} value one ply: {100 * one_ply.agreement:.1f}% agree, regret {one_ply.regret:.1f}",
          file=sys.stderr, flush=True)
    out["value_offset"] = value_offset(probe, game, apply, network.variables)
    out["prior"] = prior_shape(probe, apply, network.variables)
    print(f"{net_dir} prior: entropy {out['prior']['entropy']:.2f} nats, top probability {out['prior']['top']:.2f}",
          file=sys.stderr, flush=True)
    for name, keys in variants.items():
        cfg = search_config(network.metadata, {"num_simulations": sims, **keys}, f"network directory {net_dir}")
        fn = search_lib.make_search(game, apply, cfg)
        from arena import mate_puzzles
        start = time.perf_counter()
        actions = probe_lib.mover_actions(probe, mate_puzzles.search_mover(fn, network.variables))
        score = probe.score(actions)
        out["searches"][name] = {**dataclasses.asdict(score), "keys": keys, "seconds": time.perf_counter() - start,
                                 "policy": cfg.policy, "q_transform": cfg.q_transform, "value_scale": cfg.value_scale}
        print(f"{net_dir} {name}: {100 * score.agreement:.1f}% agree, regret {score.regret:.1f} "
              f"(policy {100 * report.policy.agreement:.1f}%, {report.policy.regret:.1f})", file=sys.stderr, flush=True)
        if targets:  # the same search as self-play runs it: the recorded root noise, which for_play took off
            recorded = {**dataclasses.asdict(search_lib.SearchConfig()), **network.metadata.get("search", {})}
            noisy = dataclasses.replace(cfg, root_noise=recorded["root_noise"], gumbel_scale=recorded["gumbel_scale"])
            found = target_scores(probe, search_lib.make_search(game, apply, noisy), network.variables)
            out["searches"][name]["targets"] = found
            print(f"{net_dir} {name} targets: {100 * found['target']['agreement']:.1f}% agree, regret "
                  f"{found['target']['regret']:.1f} (prior {100 * found['prior']['agreement']:.1f}%, "
                  f"{found['prior']['regret']:.1f}); KL(target || prior) {found['kl_target_prior']:.3f}; "
                  f"{found['positions']} positions with a target",
                  file=sys.stderr, flush=True)
    return out


def check_searches(nets: list[str], variants: dict, sims: int) -> None:
    """Every network's every search built before minutes of measuring: a key that cannot act on a
    network's recorded search (fpu under Gumbel, a misspelt key) is one line naming both, up front."""
    from arena import search_config
    from models import network_dir
    for net in nets:
        try:
            metadata = network_dir.load(net, check=False).metadata
            for keys in variants.values():
                search_config(metadata, {"num_simulations": sims, **keys}, f"network directory {net}")
        except (OSError, ValueError) as e:
            raise SystemExit(f"probe.py: {e}") from None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--net", action="append", required=True, help="network directory (repeatable)")
    parser.add_argument("--sims", type=int, default=64, help="simulations per search")
    parser.add_argument("--search", action="append", default=[], help="SearchConfig keys of one more search (its num_simulations over --sims)")
    parser.add_argument("--grid", action="store_true", help="the Q transforms and value scales of GRID")
    parser.add_argument("--limit", type=int, default=None, help="the first N probe positions")
    parser.add_argument("--no-search", action="store_true", help="the raw network's figures alone")
    parser.add_argument("--targets", action="store_true",
                        help="also each search's self-play policy targets (root noise on) as distributions")
    args = parser.parse_args(argv)
    from arena import probe as probe_lib
    variants = {} if args.no_search else dict(GRID) if args.grid else {"recorded": {}}
    if not args.no_search:
        variants.update({text: parse_keys(text) for text in args.search})
    check_searches(args.net, variants, args.sims)
    start = time.perf_counter()
    probe = probe_lib.ProbeSet.load(limit=args.limit)
    results = [measure(net, variants, args.sims, args.limit, probe, args.targets) for net in args.net]
    print(json.dumps({"bench": "probe", "positions": len(probe), "sims": args.sims, "networks": results,
                      "seconds": time.perf_counter() - start, "load_average": os.getloadavg()[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
