"""The GPU run's value-head collapse on a CPU: the learner alone, fed the way self-play feeds it.

    .venv/bin/python bench/value_collapse.py --config configs/chess_gpu.yaml --steps 3000 --delay 2000 --seed 0
    .venv/bin/python bench/value_collapse.py ... --value-channels 1 --no-bn-decay --q-ratio-from 0.05 --wdl --lr 0.1,0.02,0.002

What it models (docs/experiments/2026-11-28-value-collapse-harness.md): `slots` games are in flight at
once, back to back in each slot, so a game of mean length lives `--delay` learner steps (the H200 run:
8,192 games, ~2,000 steps; 2 cores: ~50). Each learner step plays batch / train_ratio plies over the
slots; a ply's root value q is the learner's network's value of that position at that step (what an
actor with a 16-simulation search of the current network records: an untrained network's carries
almost no signal) and its version is that step; a game's positions enter the replay window (FIFO,
`replay.window_positions`) when it ends, and the learner starts once the window holds
`replay.min_positions` (the shortest games come first, as on the GPU). The games are random play
(pgx, batched), so z is what games of an untrained network give throughout: the regime of the first
lifetime, in which the H200 run's head died. pi is uniform over the legal moves (an untrained
search's target). Batch, learning rates, momentum, L2, q_ratio and the value head are the preset's
unless a flag changes one; the network can be scaled down (--blocks, --filters).

Prints one JSON object (and each point of its series on stderr as it comes): the settings, per
`--series-every` steps the means of value_std, value_active, value_explained, the losses, sample_age
and the value BatchNorm's scale and bias, whether and when learner.health.value_head_collapsing fired,
the seconds and the load average. The random games are cached under runs/value_collapse/ (a few
minutes on 2 cores for 256 games, once).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import games  # noqa: E402
import models  # noqa: E402
from configs import ConfigError, load  # noqa: E402
from games import immediate_wins, packing  # noqa: E402
from learner import (  # noqa: E402
    TrainMetrics,  # noqa: E402
    health,  # noqa: E402
    init_train_state,
    make_train_step,
)
from replay import TrainingBatch  # noqa: E402
from selfplay import SelfPlayConfig  # noqa: E402

WIDTH = 64  # legal moves kept per position (random chess rarely has more; the rest are dropped)
SERIES = ("value_std", "value_active", "value_explained", "value_loss", "policy_loss", "sample_age", "wdl_loss")


def mover(game, takes_mates: bool):
    """A batched random mover (states [B], key) -> actions [B]: uniform over the legal moves, or, with
    `takes_mates`, a move that wins at once where one exists (games.immediate_wins: as a search with
    `win_check` plays, so games end decided about as often as early self-play's)."""
    def move(states, key):
        mask = game.legal_mask(states)
        if not takes_mates:
            return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf))
        slots = immediate_wins.legal_slots(game, states, game.max_legal_actions)
        wins = immediate_wins.immediate_wins(game, states, slots)  # [B, W]
        onto = lambda rows: jnp.zeros(mask.shape, bool).at[jnp.arange(len(slots))[:, None],  # noqa: E731
                                                            jnp.maximum(slots, 0)].max(rows)
        mating = onto(wins & (slots >= 0))
        pick = jnp.where(mating.any(axis=1, keepdims=True), mating, mask)
        return jax.random.categorical(key, jnp.where(pick, 0.0, -jnp.inf))
    return move


def random_games(num_games: int, max_plies: int, seed: int, cache: Path,
                 game_name: str = "chess", takes_mates: bool = False) -> dict[str, np.ndarray]:
    """`num_games` games of random moves (`mover`), every position of each: bits, values (its
    packed observation), legal [N, WIDTH] pgx ids (-1 pads), z [N] for the side to move, ending [N]
    (learner.train.ENDINGS), game [N]; lengths [num_games]. Cached in `cache`."""
    kind = "_mates" if takes_mates else ""
    path = cache / f"random_games_{game_name}{kind}_{num_games}_{max_plies}_{seed}.npz"
    if path.exists():
        return dict(np.load(path))
    game = games.make(game_name)
    max_plies = min(max_plies, game.max_plies)
    move = mover(game, takes_mates)

    @jax.jit
    def ply(states, key):
        mask = game.legal_mask(states)
        action = move(states, key)
        width = min(WIDTH, mask.shape[1])
        _, first = jax.lax.top_k(jnp.where(mask, -jnp.arange(mask.shape[1]), -(1 << 20)), width)
        legal = jnp.pad(jnp.where(jnp.take_along_axis(mask, first, 1), first, -1), ((0, 0), (0, WIDTH - width)),
                        constant_values=-1)
        played = (packing.pack(game.observe(states)), legal, game.current_player(states), ~game.terminal(states))
        return game.step(states, action), played

    key = jax.random.PRNGKey(seed)
    states = game.init(jax.random.split(key, num_games))
    plies, rewards = [], np.zeros((num_games, 2), np.float32)  # [G, 2] per pgx player id
    for i in range(max_plies):
        states, played = ply(states, jax.random.fold_in(key, i + 1))
        plies.append(jax.device_get(played))
        rewards += np.asarray(states.rewards)  # non-zero only at the ply that ends a game: a finished
        if bool(game.terminal(states).all()):  # game stepped again keeps zero rewards (pgx)
            break
    lengths = np.asarray(game.plies(states))
    ending = np.where(rewards[:, 0] != 0, 0, np.where(lengths >= max_plies, 2, 3)).astype(np.int8)
    live = np.stack([p[3] for p in plies], 1)  # [G, T] the position was played (its game not over)
    take = lambda f: np.stack([f(p) for p in plies], 1)[live]  # noqa: E731  [N, ...] game-major
    player = take(lambda p: p[2])
    g = np.repeat(np.arange(num_games), live.sum(1))
    out = dict(bits=take(lambda p: p[0].bits), values=take(lambda p: p[0].values),
               legal=take(lambda p: p[1]).astype(np.int16), z=rewards[g, player].astype(np.float32),
               ending=ending[g], game=g.astype(np.int32), lengths=live.sum(1).astype(np.int32))
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, **out)
    return out


class Stream:
    """Self-play's feeding of the learner: `slots` games in flight, each slot playing pool games back
    to back (all starting at once), `plies_per_step` plies per slot per learner step; positions enter
    the FIFO window when their game ends, with the q and version recorded when they were played."""

    def __init__(self, pool: dict, slots: int, total_plies: int, window: int, rng: np.random.Generator):
        lengths, self.pool = pool["lengths"], pool
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        n_games = math.ceil(total_plies / lengths.min()) + 1
        seq = rng.integers(len(lengths), size=(slots, n_games))  # each slot's games
        starts = np.concatenate([np.zeros((slots, 1), np.int64), np.cumsum(lengths[seq], 1)[:, :-1]], 1)
        plies = np.arange(total_plies)
        index, ends = np.empty((slots, total_plies), np.int64), np.empty((slots, total_plies), np.int64)
        for s in range(slots):  # slot s's ply c: which game j, which position of the pool, when it ends
            j = np.searchsorted(starts[s], plies, side="right") - 1
            index[s], ends[s] = offsets[seq[s, j]] + plies - starts[s, j], starts[s, j] + lengths[seq[s, j]]
        self.index, self.q, self.version = index.ravel(), np.zeros(index.size, np.float32), np.zeros(index.size, np.int32)
        flat_ends = ends.ravel()
        self.order = np.argsort(flat_ends, kind="stable")  # positions in the order they enter the window
        self.enter_at = flat_ends[self.order]
        self.slots, self.total_plies, self.clock, self.entered = slots, total_plies, 0, 0
        self.ring, self.size, self.head = np.zeros(window, np.int64), 0, 0

    def play(self, upto: int, value_fn, step: int) -> None:
        """Plays every slot up to its ply `upto`: records q (value_fn on the positions) and the version,
        then moves the positions of games ended by then into the window."""
        upto = min(upto, self.total_plies)
        if upto <= self.clock:
            return
        ids = (np.arange(self.slots)[:, None] * self.total_plies + np.arange(self.clock, upto)[None]).ravel()
        self.q[ids], self.version[ids], self.clock = value_fn(self.index[ids]), step, upto
        n = np.searchsorted(self.enter_at, upto, side="right")
        flat = self.order[self.entered:n][-len(self.ring):]  # FIFO: they overwrite the oldest positions
        self.ring[(self.head + np.arange(len(flat))) % len(self.ring)] = flat
        self.head, self.size = (self.head + len(flat)) % len(self.ring), min(len(self.ring), self.size + len(flat))
        self.entered = n

    def sample(self, batch: int, rng: np.random.Generator) -> TrainingBatch:
        flat = self.ring[rng.integers(self.size, size=batch)]
        i = self.index[flat]
        legal = self.pool["legal"][i].astype(np.int32)
        policy = (legal >= 0) / np.maximum(1, (legal >= 0).sum(1, keepdims=True))
        obs = packing.PackedObservation(self.pool["bits"][i], self.pool["values"][i])
        return TrainingBatch(observation=obs, legal_actions=legal, policy=policy.astype(np.float32),
                             z=self.pool["z"][i], q=self.q[flat], ending=self.pool["ending"][i],
                             version=self.version[flat])


def value_bn(params) -> str:
    """The name of the value head's BatchNorm (the ResNet's last top-level one, after the policy head's)."""
    names = [k for k in params if k.startswith("BatchNorm_")]
    return max(names, key=lambda k: int(k.split("_")[1]))


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default=str(ROOT / "configs/chess_gpu.yaml"), help="preset: network, learner, replay")
    p.add_argument("--set", nargs="*", default=[], help="dotted overrides of the preset, e.g. learner.momentum=0.9")
    p.add_argument("--steps", type=int, default=3000, help="learner steps")
    p.add_argument("--seed", type=int, default=0, help="network init, game order and sampling")
    p.add_argument("--delay", type=float, default=2000, help="lifetime of a game of mean length, in learner steps")
    p.add_argument("--blocks", type=int, help="residual blocks (default: the preset's)")
    p.add_argument("--filters", type=int, help="trunk channels (default: the preset's)")
    p.add_argument("--batch", type=int, help="learner.batch_size (default: the preset's)")
    p.add_argument("--lr", help="learner.lr_values, comma-separated (default: the preset's)")
    p.add_argument("--value-channels", type=int, help="network.resnet.value_channels (default: the preset's)")
    p.add_argument("--no-bn-decay", action="store_true", help="learner.decay_norms=false")
    p.add_argument("--q-ratio", type=float, help="learner.q_ratio (default: the preset's)")
    p.add_argument("--q-ratio-from", type=float, default=0.0, help="learner.q_ratio_after_explained")
    p.add_argument("--wdl", action="store_true", help="network.resnet.wdl_head=true")
    p.add_argument("--window", type=int, help="replay.window_positions (default: the preset's)")
    p.add_argument("--min-positions", type=int, help="replay.min_positions (default: the preset's)")
    p.add_argument("--pool-games", type=int, default=256, help="random games the positions come from")
    p.add_argument("--max-plies", type=int, default=512, help="ply cap of the random games (a draw)")
    p.add_argument("--pool-seed", type=int, default=0, help="seed of the random games (the same for every --seed)")
    p.add_argument("--pool-takes-mates", action="store_true",
                   help="the random movers take a mate in one where there is one (decided games as in early self-play)")
    p.add_argument("--dead-value-head", action="store_true",
                   help="control: the value BatchNorm's bias at -100 from the start (the H200 run's end state)")
    p.add_argument("--health-every", type=int, default=50, help="steps between value-health checks")
    p.add_argument("--health-min-steps", type=int, default=health.MIN_STEPS, help="steps before the check may fire")
    p.add_argument("--series-every", type=int, default=100, help="steps per point of the series")
    p.add_argument("--cache", default=str(ROOT / "runs/value_collapse"), help="where the random games are kept")
    return p.parse_args(argv)


def preset(args) -> SelfPlayConfig:
    resnet = {k: v for k, v in (("num_blocks", args.blocks), ("filters", args.filters),
                                ("value_channels", args.value_channels)) if v is not None}
    if args.wdl:
        resnet["wdl_head"] = True
    learner = {"decay_norms": not args.no_bn_decay, "q_ratio_after_explained": args.q_ratio_from}
    for key, value in (("batch_size", args.batch), ("q_ratio", args.q_ratio)):
        if value is not None:
            learner[key] = value
    if args.lr:
        learner["lr_values"] = [float(x) for x in args.lr.split(",")]
    replay = {k: v for k, v in (("window_positions", args.window), ("min_positions", args.min_positions)) if v}
    try:
        cfg = load(SelfPlayConfig, args.config, args.set, extra={"network": {"resnet": resnet}, "learner": learner,
                                                                 "replay": replay})
    except ConfigError as e:  # e.g. --lr with a number of rates the preset's boundaries do not take
        raise SystemExit(f"bench/value_collapse.py: config error: {e}") from None
    if cfg.game != "chess" or cfg.network.family != "resnet":
        raise SystemExit("bench/value_collapse.py: a chess ResNet preset (its value head is the suspect)")
    return cfg


def main(argv=None) -> int:
    args = parse_args(argv)
    cfg = preset(args)
    lc, t0 = cfg.learner, time.perf_counter()
    pool = random_games(args.pool_games, args.max_plies, args.pool_seed, Path(args.cache),
                        takes_mates=args.pool_takes_mates)
    t_pool = time.perf_counter() - t0
    game = games.make("chess")
    spec = jax.ShapeDtypeStruct(game.spec.observation_shape, game.observation_dtype)
    net = models.make_network(cfg.network, game.spec)

    mean_len = float(pool["lengths"].mean())
    per_step = lc.batch_size / lc.train_ratio  # positions generated per learner step
    slots = max(1, round(args.delay * per_step / mean_len))
    plies_per_step = per_step / slots
    total_plies = math.ceil((cfg.replay.min_positions + args.steps * per_step) / slots) + int(pool["lengths"].max())
    rng = np.random.default_rng(args.seed)
    stream = Stream(pool, slots, total_plies, cfg.replay.window_positions, rng)

    sample_obs = packing.unpack(packing.PackedObservation(pool["bits"][:1], pool["values"][:1]), spec.shape, spec.dtype)
    state = init_train_state(net, lc, jnp.asarray(sample_obs), jax.random.PRNGKey(args.seed))
    if args.dead_value_head:
        params, name = dict(state.params), value_bn(state.params)
        params[name] = {"scale": jnp.ones_like(params[name]["scale"]), "bias": jnp.full_like(params[name]["bias"], -100.0)}
        state = state._replace(params=params)
    train_step = make_train_step(net, lc, obs_spec=spec)

    @jax.jit
    def values(params, batch_stats, bits, vals):
        obs = packing.unpack(packing.PackedObservation(bits, vals), spec.shape, spec.dtype)
        return net.apply({"params": params, "batch_stats": batch_stats}, obs, train=False).value

    chunk = min(1024, slots * math.ceil(plies_per_step))  # a step's plies in one call

    def value_fn(index):  # the current network's value of pool positions (fixed-size chunks: one compile)
        out = []
        for i in range(0, len(index), chunk):
            part = index[i:i + chunk]
            pad = np.pad(part, (0, chunk - len(part)))
            out.append(np.asarray(values(state.params, state.batch_stats, pool["bits"][pad], pool["values"][pad]))[:len(part)])
        return np.concatenate(out)

    clock = 0
    while stream.size < cfg.replay.min_positions and stream.clock < total_plies:  # actors alone, version 0
        clock += 1
        stream.play(clock, value_fn, 0)
    t_fill = time.perf_counter() - t0 - t_pool

    series, acc, start, fired, untrained = [], {}, None, None, None
    origin = stream.clock
    for step in range(args.steps):
        stream.play(origin + int((step + 1) * plies_per_step), value_fn, step)
        state, metrics = train_step(state, stream.sample(lc.batch_size, rng))
        m = TrainMetrics.of(jax.device_get(metrics))
        if untrained is None:  # the first step's figures are the untrained network's (before its update)
            untrained = {"value_std": m.value_std, "value_active": m.value_active}
        for name in SERIES:
            if getattr(m, name, None) is not None:
                acc.setdefault(name, []).append(getattr(m, name))
        if lc.q_ratio_after_explained > 0:
            acc.setdefault("q_used", []).append(float((m.value_explained or 0) >= lc.q_ratio_after_explained))
        if (step + 1) % args.health_every == 0 and m.value_std is not None:
            if start is None:
                start = {"step": step + 1, "value_std": m.value_std, "value_active": m.value_active}
            elif fired is None and health.value_head_collapsing(
                    step + 1 - start["step"], m.value_std, start["value_std"], m.value_active, m.value_explained,
                    min_steps=args.health_min_steps):
                fired = step + 1
        if (step + 1) % args.series_every == 0 or step + 1 == args.steps:
            bn = jax.device_get(state.params[value_bn(state.params)])
            series.append({"step": step + 1, **{k: float(np.mean(v)) for k, v in acc.items()},
                           "value_bn_scale": float(np.mean(bn["scale"])), "value_bn_bias": float(np.mean(bn["bias"]))})
            print(json.dumps({"seconds": round(time.perf_counter() - t0, 1), **series[-1]}), file=sys.stderr, flush=True)
            acc = {}

    after = [p["value_std"] for p in series if p["step"] > args.health_min_steps]
    out = {
        "settings": {**{k: v for k, v in vars(args).items() if k not in ("cache",)},
                     "batch_size": lc.batch_size, "lr_values": list(lc.lr_values), "lr_boundaries": list(lc.lr_boundaries),
                     "momentum": lc.momentum, "l2": lc.l2, "decay_norms": lc.decay_norms, "q_ratio": lc.q_ratio,
                     "q_ratio_after_explained": lc.q_ratio_after_explained, "train_ratio": lc.train_ratio,
                     "resnet": {k: getattr(cfg.network.resnet, k) for k in ("num_blocks", "filters", "value_hidden",
                                                                             "value_channels", "wdl_head")},
                     "window_positions": cfg.replay.window_positions, "min_positions": cfg.replay.min_positions,
                     "slots": slots, "plies_per_step": plies_per_step, "mean_game_plies": mean_len,
                     "pool_positions": int(len(pool["z"])),
                     "pool_endings": {n: float(np.mean(pool["ending"] == i)) for i, n in
                                      enumerate(("won_by_rules", "resigned", "capped", "drawn_by_rules"))}},
        "series": series,
        "value_untrained": untrained,  # the H200 run's: value std 0.026, 25% of units active
        "value_health_start": start,  # the first check's figures: the run's start as learner/health.py takes it
        "collapsed": fired is not None,
        "collapse_step": fired,
        "value_std_min_after_min_steps": min(after) if after else None,
        # the goal: the value's spread above the untrained network's from step health_min_steps to the end
        "value_std_stays_above_untrained": bool(untrained and after and min(after) > untrained["value_std"]),
        "seconds": {"pool": round(t_pool, 1), "prefill": round(t_fill, 1),
                    "train": round(time.perf_counter() - t0 - t_pool - t_fill, 1)},
        "loadavg": list(os.getloadavg()),
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
