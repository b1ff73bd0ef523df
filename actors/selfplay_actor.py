"""The self-play actor: a batch of games advanced one batched search per ply (run as a Ray actor).

    actor = ray.remote(SelfPlayActor).options(num_cpus=..., num_gpus=...).remote(
        actor_id, game_name, network_cfg, search_cfg, actor_cfg, replay, store, seed)
    report = ray.get(actor.play.remote(plies))  # a PlayReport; finished games are durable in replay

Every ply: search all B games, record each position (observation, legal moves, pi, child Q, root
value), check resignation, step the games. A finished game (rules, the game's ply cap as a draw, or
resignation) is encoded and sent to the replay buffer and its slot restarts with a fresh game.
Newer parameters are pulled with one `get_newer` call kept in flight and polled without waiting.
"""
from __future__ import annotations

import dataclasses
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import ray

import games
import models
import search as search_lib
from actors.config import ActorConfig
from actors.messages import PlayReport
from configs.runtime import pin_threads
from replay.record import GameRecord, compress_observation, encode


@dataclasses.dataclass
class _GameLog:
    """Host-side log of one game in progress."""

    init_key: np.ndarray
    resign_disabled: bool
    first_version: int
    obs: list = dataclasses.field(default_factory=list)
    to_play: list = dataclasses.field(default_factory=list)
    num_legal: list = dataclasses.field(default_factory=list)
    legal_actions: list = dataclasses.field(default_factory=list)
    policy: list = dataclasses.field(default_factory=list)
    child_q: list = dataclasses.field(default_factory=list)
    root_value: list = dataclasses.field(default_factory=list)
    actions: list = dataclasses.field(default_factory=list)
    full_search: list = dataclasses.field(default_factory=list)
    would_resign: int = -1
    serial: int = 0
    opening: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int32))  # book moves to play first


def _restarted() -> bool:
    """Whether this is a Ray actor that Ray restarted after its process died."""
    if not ray.is_initialized():
        return False
    context = ray.get_runtime_context()
    if context.get_actor_id() is None:
        return False
    with warnings.catch_warnings():  # it reads the deprecated `actor_id` itself
        warnings.simplefilter("ignore")
        return bool(context.was_current_actor_reconstructed)


def make_evaluate(net):
    """The network as the search calls it: (variables, obs [B, ...]) -> NetworkOutput."""
    return lambda variables, obs: net.apply(variables, obs, train=False)


class SelfPlayActor:
    """Plays `actor_cfg.games_per_actor` games in parallel forever, a few plies per `play` call."""

    def __init__(self, actor_id: int, game_name: str, network_cfg, search_cfg, actor_cfg: ActorConfig,
                 replay, param_store, seed: int, opening_lines: tuple[np.ndarray, ...] = ()):
        self.actor_id = actor_id
        self.opening_lines = opening_lines  # pgx action lines (selfplay/openings.py); a game starts on one
        self.cfg = actor_cfg
        self.game = games.make(game_name)
        self.net = models.make_network(network_cfg, self.game.spec)
        self.search = search_lib.make_search(self.game, make_evaluate(self.net), search_cfg,
                                             return_tree=search_cfg.reuse_tree)
        self.fast_search = None  # playout cap randomization's cheap search (actors/config.py)
        if actor_cfg.full_search_fraction < 1.0:  # SelfPlayConfig checks fast < full simulations
            fast_cfg = dataclasses.replace(search_cfg, num_simulations=actor_cfg.fast_simulations, root_noise=False)
            self.fast_search = search_lib.make_search(self.game, make_evaluate(self.net), fast_cfg)
        self.replay = replay
        self.store = param_store
        self.session = f"{time.time_ns() // 1_000_000:x}"  # distinguishes game ids across resumes and restarts
        # Ray restarts a dead actor with the same arguments: new seeds, or it would replay its first life's games
        self.rng = np.random.default_rng([seed, actor_id] + ([int(self.session, 16)] if _restarted() else []))
        self.key = jax.random.PRNGKey(int(self.rng.integers(2**31)))
        self.version, self.variables = ray.get(param_store.get_newer.remote(-1))  # blocks once, at start
        self._pull = None
        self.games_started = 0
        B = actor_cfg.games_per_actor
        self._step = jax.jit(self.game.step)
        self._observe = jax.jit(lambda s: (self.game.observe(s), self.game.current_player(s)))
        self._finish = jax.jit(lambda s: (self.game.terminal(s), s.truncated, self.game.rewards(s)))
        self._reset = jax.jit(self._reset_fn)
        keys = self._new_keys(B)
        self.states = jax.jit(self.game.init)(jnp.asarray(keys))
        self.logs = [self._new_log(k) for k in keys]
        self.obs_dtype = str(np.dtype(self.game.observe(self.states).dtype))
        self.reuse = None  # search.reuse_tree: the last search's tree, the slot each game played, kept rows
        if search_cfg.reuse_tree:
            _, tree = jax.eval_shape(self.search, self.variables, self.states, self.key)
            empty = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), tree)
            self.reuse = search_lib.Reuse(empty, jnp.zeros(B, jnp.int32), jnp.zeros(B, bool))
            self.reuse_version = self.version

    # -- game slots ------------------------------------------------------------------------------
    def _new_keys(self, n: int) -> np.ndarray:
        return self.rng.integers(0, 2**32, size=(n, 2), dtype=np.uint32)

    def _new_log(self, key: np.ndarray) -> _GameLog:
        self.games_started += 1
        disabled = (not self.cfg.resign_enabled) or self.rng.random() < self.cfg.resign_disabled_fraction
        log = _GameLog(init_key=key, resign_disabled=disabled, first_version=self.version,
                       serial=self.games_started)
        if self.opening_lines:
            log.opening = self.opening_lines[int(self.rng.integers(len(self.opening_lines)))]
        return log

    def _reset_fn(self, states, keys, mask):
        fresh = self.game.init(keys)
        pick = lambda new, old: jnp.where(mask.reshape(mask.shape + (1,) * (old.ndim - 1)), new, old)
        return jax.tree.map(pick, fresh, states)

    # -- parameters ------------------------------------------------------------------------------
    def _poll_parameters(self) -> None:
        """Swaps in newer variables if the pending pull returned; never waits."""
        if self._pull is None:
            self._pull = self.store.get_newer.remote(self.version)
            return
        ready, _ = ray.wait([self._pull], timeout=0)
        if ready:
            result = ray.get(self._pull)
            self._pull = None
            if result is not None:
                self.version, self.variables = result

    def pin_cpus(self, cores: list[int]) -> bool:
        """Pins this actor's process (every thread) to `cores` (SelfPlayConfig.pin_cpus)."""
        return pin_threads(cores)

    # -- play ------------------------------------------------------------------------------------
    def play(self, num_plies: int) -> PlayReport:
        """Advances every game `num_plies` plies; returns after finished games are acknowledged."""
        acks, finished, positions = [], [], 0
        t0 = time.perf_counter()
        for _ in range(num_plies):
            self._poll_parameters()
            self.key, key = jax.random.split(self.key)
            full = self.fast_search is None or self.rng.random() < self.cfg.full_search_fraction
            if self.reuse is not None:
                if self.reuse_version != self.version:  # new weights: the old tree's values are stale
                    self.reuse = self.reuse._replace(keep=jnp.zeros_like(self.reuse.keep))
                    self.reuse_version = self.version
                out, tree = self.search(self.variables, self.states, key, self.reuse)
            else:
                out = (self.search if full else self.fast_search)(self.variables, self.states, key)
            obs, to_play = jax.device_get(self._observe(self.states))
            action, slots, visits, pi, q, v = jax.device_get(
                (out.action, out.slot_actions, out.visit_counts, out.policy_target, out.child_q, out.root_value))
            action = self._opening_moves(action, slots)
            resign = self._record_ply(obs, to_play, action, slots, visits, pi, q, v, full)
            if self.reuse is not None:  # the played move's subtree, unless a game ends or resigns here
                played = slots == action[:, None]
                self.reuse = search_lib.Reuse(tree, jnp.asarray(np.argmax(played, axis=1), jnp.int32),
                                              jnp.asarray(played.any(axis=1) & (resign < 0)))
            self.states = self._step(self.states, jnp.asarray(action))
            positions += len(self.logs)
            done, capped, rewards = jax.device_get(self._finish(self.states))
            ended = done | (resign >= 0)
            if ended.any():
                for b in np.flatnonzero(ended):
                    record = self._close_game(b, rewards[b], bool(capped[b]), int(resign[b]))
                    acks.append(self.replay.add.remote(encode(record)))
                    finished.append(record)
                keys = self._new_keys(len(self.logs))
                self.states = self._reset(self.states, jnp.asarray(keys), jnp.asarray(ended))
                if self.reuse is not None:
                    self.reuse = self.reuse._replace(keep=self.reuse.keep & ~jnp.asarray(ended))
                for b in np.flatnonzero(ended):
                    self.logs[b] = self._new_log(keys[b])
        ray.get(acks)  # durable before we report them
        return PlayReport(
            actor=self.actor_id, games=len(finished), positions=positions,
            game_plies=tuple(r.plies for r in finished), version=self.version,
            seconds=time.perf_counter() - t0, node=ray.get_runtime_context().get_node_id())

    def _opening_moves(self, action: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """[B] the search's moves, except inside a game's opening: its book line's move, then a uniform
        random legal move (`slots` [B, W] pgx ids, -1 pads) for `random_opening_plies` plies."""
        if self.cfg.random_opening_plies == 0 and not self.opening_lines:
            return action
        action = np.array(action)
        for b, log in enumerate(self.logs):
            ply, book = len(log.actions), len(log.opening)
            if ply < book:
                action[b] = log.opening[ply]
            elif ply < book + self.cfg.random_opening_plies:
                action[b] = self.rng.choice(slots[b][slots[b] >= 0])
        return action

    def _record_ply(self, obs, to_play, action, slots, visits, pi, q, v, full: bool) -> np.ndarray:
        """Logs each game's position; returns [B] the resigning pgx player id or -1."""
        resign = np.full(len(self.logs), -1)
        for b, log in enumerate(self.logs):
            n = int(np.sum(slots[b] >= 0))
            ply = len(log.actions)
            visited = q[b, :n][visits[b, :n] > 0]  # child Q (side to move) of the searched moves
            best = visited.max() if visited.size else v[b]
            hopeless = v[b] < self.cfg.resign_threshold and best < self.cfg.resign_threshold
            active = self.cfg.resign_enabled and self.version >= self.cfg.resign_after_version
            if active and hopeless and ply >= self.cfg.resign_min_plies:
                if log.resign_disabled:
                    if log.would_resign < 0:
                        log.would_resign = int(to_play[b])
                else:
                    resign[b] = int(to_play[b])
                    continue  # the game ends before this position's move
            log.obs.append(compress_observation(obs[b]))
            log.to_play.append(int(to_play[b]))
            log.num_legal.append(n)
            log.legal_actions.append(slots[b, :n])
            log.policy.append(pi[b, :n])
            log.child_q.append(q[b, :n])
            log.root_value.append(float(v[b]))
            log.actions.append(int(action[b]))
            log.full_search.append(full)
        return resign

    def _close_game(self, b: int, rewards: np.ndarray, capped: bool, resigner: int) -> GameRecord:
        log = self.logs[b]
        if resigner >= 0:
            rewards = np.where(np.arange(2) == resigner, -1.0, 1.0).astype(np.float32)
            termination = "resign"
        else:
            termination = "cap" if capped else "rules"
        cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)
        return GameRecord(
            game=self.game.name, game_id=f"{self.session}-a{self.actor_id}-g{log.serial}",
            init_key=log.init_key, actions=np.asarray(log.actions, np.int32), observations=log.obs,
            obs_shape=tuple(self.game.spec.observation_shape),
            obs_dtype=self.obs_dtype,
            to_play=np.asarray(log.to_play, np.int8), num_legal=np.asarray(log.num_legal, np.int16),
            legal_actions=cat(log.legal_actions, np.int32), policy=cat(log.policy, np.float32),
            child_q=cat(log.child_q, np.float32), root_value=np.asarray(log.root_value, np.float32),
            rewards=np.asarray(rewards, np.float32), termination=termination,
            resign_disabled=log.resign_disabled, resign_would_have=log.would_resign,
            full_search=np.asarray(log.full_search, bool),
            param_versions=np.asarray([log.first_version, self.version], np.int64), created=time.time(),
        )
