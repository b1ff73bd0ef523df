"""The self-play actor: a batch of games advanced one batched search per ply (run as a Ray actor).

    actor = ray.remote(SelfPlayActor).options(num_cpus=..., num_gpus=...).remote(
        actor_id, game_name, network_cfg, search_cfg, actor_cfg, replay, store, seed)
    report = ray.get(actor.play.remote(plies))  # a PlayReport; finished games are durable in replay

Every ply: search all B games, record each position (observation, legal moves, pi, child Q, root
value), check resignation, step the games. A finished game (rules, the game's ply cap as a draw,
resignation, or `adjudicate_plies`' material score) is encoded and sent to the replay buffer and its slot restarts with a fresh game.
Newer parameters are pulled with one `get_newer` call kept in flight and polled without waiting.

On an accelerator the ply's device work is one jitted search plus one jitted observe (the
observation packed on the device, games/packing.py: 1.4 KB per chess position crosses to the host,
not 30 KB of float32) and one step; the host's share (the resignation test, vectorised over the
batch, and each game's log) runs while the device already searches the next ply: JAX dispatches
asynchronously, so the next search is queued before the host records this one.
"""
from __future__ import annotations

import dataclasses
import time
import warnings
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
import ray

import games
import models
import search as search_lib
from actors.config import ActorConfig
from actors.messages import PlayReport
from actors.resignation import ThresholdTuner, resign_scores
from games import material, packing
from replay import GameRecord, encode
from runtime import pin_threads

if TYPE_CHECKING:  # annotations only: the module loads with a sparring partner
    from actors.sparring import SparringGame


@dataclasses.dataclass
class _GameLog:
    """Host-side log of one game in progress."""

    init_key: np.ndarray
    resign_disabled: bool
    first_version: int
    obs: list = dataclasses.field(default_factory=list)  # packed observations (games/packing.py to_bytes)
    to_play: list = dataclasses.field(default_factory=list)
    num_legal: list = dataclasses.field(default_factory=list)
    legal_actions: list = dataclasses.field(default_factory=list)
    policy: list = dataclasses.field(default_factory=list)
    child_q: list = dataclasses.field(default_factory=list)
    root_value: list = dataclasses.field(default_factory=list)
    actions: list = dataclasses.field(default_factory=list)
    would_resign: int = -1
    resign_scores: list = dataclasses.field(default_factory=list)  # never-resign games: per ply (+inf: not allowed)
    serial: int = 0
    opening: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int32))  # book moves to play first
    sparring: SparringGame | None = None  # actors.sparring_fraction: Stockfish plays one side


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


class SelfPlayActor:
    """Plays `actor_cfg.games_per_actor` games in parallel forever, a few plies per `play` call."""

    def __init__(self, actor_id: int, game_name: str, network_cfg, search_cfg, actor_cfg: ActorConfig,
                 replay, param_store, seed: int, opening_lines: tuple[np.ndarray, ...] | None = ()):
        """replay, param_store: handles, or the names of Ray actors (a run passes names: an actor Ray
        restarts looks the live ones up instead of needing arguments kept in the object store).
        opening_lines: pgx action lines a game starts on (selfplay/openings.py); None: the store's."""
        replay, param_store = (ray.get_actor(h) if isinstance(h, str) else h for h in (replay, param_store))
        self.actor_id = actor_id
        if opening_lines is None:
            opening_lines = ray.get(param_store.get_opening_lines.remote())
        self.opening_lines = opening_lines
        self.cfg = actor_cfg
        self.game = games.make(game_name)
        self.net = models.make_network(network_cfg, self.game.spec)
        self.search = search_lib.make_search(self.game, models.evaluation_fn(self.net), search_cfg,
                                             return_tree=search_cfg.reuse_tree)
        self.replay = replay
        self.store = param_store
        self.partner = None  # actors.sparring_fraction: one Stockfish for this actor's sparring games
        if actor_cfg.sparring_fraction > 0:  # on use: python-chess's tables, which other games never load
            from actors.sparring import SparringPartner
            self.partner = SparringPartner(actor_cfg.sparring_skill, actor_cfg.sparring_depth)
        self.started = f"{time.time_ns() // 1_000_000:x}"  # start time (ms, hex): game ids stay unique across resumes and restarts
        # Ray restarts a dead actor with the same arguments: new seeds, or it would replay its first life's games
        self.rng = np.random.default_rng([seed, actor_id] + ([int(self.started, 16)] if _restarted() else []))
        self.key = jax.random.PRNGKey(int(self.rng.integers(2**31)))
        self.version, self.variables = ray.get(param_store.get_newer.remote(-1))  # blocks once, at start
        self.resign = ThresholdTuner(actor_cfg.resign_threshold, actor_cfg.resign_false_positive_target,
                                     actor_cfg.resign_window_games)
        self._pull = None
        self.games_started = 0
        B = actor_cfg.games_per_actor
        self._observe = jax.jit(lambda s: (packing.pack(self.game.observe(s)), self.game.current_player(s)))
        self._advance = jax.jit(self._advance_fn)
        self._reset = jax.jit(self._reset_fn)
        keys = self._new_keys(B)
        self.states = jax.jit(self.game.init)(jnp.asarray(keys))
        self.logs = [self._new_log(k) for k in keys]
        self.obs_dtype = str(np.dtype(self.game.observation_dtype))
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
            line = self.opening_lines[int(self.rng.integers(len(self.opening_lines)))]
            if self.cfg.opening_book_prefix == "random":  # none up to all but the last (which may end the game)
                line = line[:int(self.rng.integers(max(len(line), 1)))]
            log.opening = line
        if self.partner is not None and self.rng.random() < self.cfg.sparring_fraction:
            from actors.sparring import SparringGame  # loaded with the partner above
            log.sparring = SparringGame(bool(self.rng.random() < 0.5), len(log.opening) + self.cfg.random_opening_plies)
        return log

    def _advance_fn(self, states, action):
        """Plays `action` [B]; the new states and whether each game ended (terminal, capped, adjudicated)
        with its rewards."""
        states = self.game.step(states, action)
        done, rewards = self.game.terminal(states), self.game.rewards(states)
        adjudicated = jnp.zeros_like(done)
        if self.cfg.adjudicate_plies:  # chess (SelfPlayConfig checks): long games scored by material
            adjudicated = ~done & (self.game.plies(states) >= self.cfg.adjudicate_plies)
            rewards = jnp.where(adjudicated[:, None], material.adjudicate(states, self.cfg.adjudicate_margin), rewards)
        return states, (done | adjudicated, states.truncated & ~adjudicated, adjudicated, rewards)

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
    def _dispatch(self):
        """Queues this ply's search and packed observation on the device; returns without waiting:
        (search output, tree or None, packed observation, player to move, parameter version)."""
        self._poll_parameters()
        self.key, key = jax.random.split(self.key)
        tree = None
        if self.reuse is not None:
            if self.reuse_version != self.version:  # new weights: the old tree's values are stale
                self.reuse = self.reuse._replace(keep=jnp.zeros_like(self.reuse.keep))
                self.reuse_version = self.version
            out, tree = self.search(self.variables, self.states, key, self.reuse)
        else:
            out = self.search(self.variables, self.states, key)
        return (out, tree, *self._observe(self.states), self.version)

    def play(self, num_plies: int) -> PlayReport:
        """Advances every game `num_plies` plies; returns after finished games are acknowledged."""
        acks, finished, positions, partner_scores = [], [], 0, []
        t0 = time.perf_counter()
        pending = self._dispatch()
        for ply in range(num_plies):
            out, tree, packed, to_play, version = pending
            action, greedy, slots, visits, pi, q, v, packed, to_play = jax.device_get(
                (out.action, out.greedy_action, out.slot_actions, out.visit_counts, out.policy_target, out.child_q, out.root_value,
                 packed, to_play))
            action = self._opening_moves(action, slots)
            action = self._partner_moves(action, greedy)
            resign = self._resignations(to_play, slots, visits, q, v, version)
            if self.reuse is not None:  # the played move's subtree, unless a game ends or resigns here
                played = slots == action[:, None]
                self.reuse = search_lib.Reuse(tree, jnp.asarray(np.argmax(played, axis=1), jnp.int32),
                                              jnp.asarray(played.any(axis=1) & (resign < 0)))
            self.states, ends = self._advance(self.states, jnp.asarray(action))
            done, capped, adjudicated, rewards = jax.device_get(ends)
            ended = done | (resign >= 0)
            keys = self._new_keys(len(self.logs)) if ended.any() else None
            if keys is not None:
                self.states = self._reset(self.states, jnp.asarray(keys), jnp.asarray(ended))
                if self.reuse is not None:
                    self.reuse = self.reuse._replace(keep=self.reuse.keep & ~jnp.asarray(ended))
            if ply + 1 < num_plies:
                pending = self._dispatch()  # the device searches the next ply while the host logs this one
            self._record_ply(packed, to_play, action, slots, pi, q, v, resign)
            positions += len(self.logs)
            frames = []
            for b in np.flatnonzero(ended):
                ending = "adjudicated" if adjudicated[b] else "cap" if capped[b] else "rules"
                record = self._close_game(b, rewards[b], ending, int(resign[b]), version)
                if record.partner_player >= 0:
                    partner_scores.append(record.partner_score())
                frames.append(encode(record))
                finished.append(record)
                self.logs[b] = self._new_log(keys[b])
            if frames:
                acks.append(self.replay.add_many.remote(frames))
        ray.get(acks)  # durable before we report them
        return PlayReport(
            actor=self.actor_id, games=len(finished), positions=positions,
            game_plies=tuple(r.plies for r in finished), version=self.version,
            seconds=time.perf_counter() - t0, node=ray.get_runtime_context().get_node_id(),
            resign_threshold=self.resign.threshold if self.cfg.resign_enabled else None,
            partner_scores=tuple(partner_scores))

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

    def _partner_moves(self, action: np.ndarray, greedy: np.ndarray) -> np.ndarray:
        """[B] the moves chosen so far; in a sparring game past its opening Stockfish's on its side and the
        search's `greedy` move on the network's (no temperature's sampling: it plays as in a match)."""
        if self.partner is None:
            return action
        return np.array([log.sparring.take(a, g, self.partner) if log.sparring else a
                         for a, g, log in zip(action, greedy, self.logs)], action.dtype)

    def _resignations(self, to_play, slots, visits, q, v, version: int) -> np.ndarray:
        """[B] the pgx player id resigning each game before this ply's move, or -1 (`version`: the
        parameters that searched it). A game of the never-resign fraction only notes who would have
        resigned first, and its resign score for the threshold's tuner."""
        B = len(self.logs)
        plies = np.array([len(log.actions) for log in self.logs])
        allowed = self.cfg.resign_enabled and version >= self.cfg.resign_after_version
        scores = resign_scores(slots, visits, q, v) if allowed else np.full(B, np.inf)
        scores = np.where(plies >= self.cfg.resign_min_plies, scores, np.inf)
        if self.partner is not None:  # sparring games are played out, as in a match: their score is a verdict
            scores = np.where([log.sparring is not None for log in self.logs], np.inf, scores)
        resign = np.full(B, -1)
        for b, log in enumerate(self.logs):
            if log.resign_disabled:
                log.resign_scores.append(scores[b])
        for b in np.flatnonzero(scores < self.resign.threshold):
            log = self.logs[b]
            if not log.resign_disabled:
                resign[b] = int(to_play[b])
            elif log.would_resign < 0:
                log.would_resign = int(to_play[b])
        return resign

    def _record_ply(self, packed, to_play, action, slots, pi, q, v, resign) -> None:
        """Logs each game's position, except where its player resigned before moving."""
        n = np.sum(slots >= 0, axis=1)
        rows = packing.to_bytes(packed)
        for b, log in enumerate(self.logs):
            if resign[b] >= 0:
                continue  # the game ends before this position's move
            k = n[b]
            log.obs.append(rows[b])
            log.to_play.append(to_play[b])
            log.num_legal.append(k)
            log.legal_actions.append(slots[b, :k].copy())  # copies: a view would keep the whole ply alive
            log.policy.append(pi[b, :k].copy())
            log.child_q.append(q[b, :k].copy())
            log.root_value.append(v[b])
            log.actions.append(action[b])

    def _close_game(self, b: int, rewards: np.ndarray, ending: str, resigner: int, version: int) -> GameRecord:
        """Game b's record; `ending`: how the step ended it (rules, cap, adjudicated), unless `resigner`
        (a pgx player id, or -1) resigned first; `version`: the parameters that played its last move."""
        log = self.logs[b]
        termination = ending
        if resigner >= 0:
            rewards = np.where(np.arange(2) == resigner, -1.0, 1.0).astype(np.float32)
            termination = "resign"
        if log.resign_disabled and not log.sparring:  # played to its end: who would have resigned, and lost?
            self.resign.add(np.asarray(log.resign_scores), np.asarray(log.to_play), np.asarray(rewards))
        cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)
        partner, partner_player = "", -1
        if log.sparring:
            partner, partner_player = self.partner.name, log.sparring.partner_player(int(log.to_play[0]))
        return GameRecord(
            game=self.game.name, game_id=f"{self.started}-a{self.actor_id}-g{log.serial}",
            init_key=log.init_key, actions=np.asarray(log.actions, np.int32), observations=log.obs,
            obs_shape=tuple(self.game.spec.observation_shape),
            obs_dtype=self.obs_dtype, obs_encoding="packed",
            to_play=np.asarray(log.to_play, np.int8), num_legal=np.asarray(log.num_legal, np.int16),
            legal_actions=cat(log.legal_actions, np.int32), policy=cat(log.policy, np.float32),
            child_q=cat(log.child_q, np.float32), root_value=np.asarray(log.root_value, np.float32),
            rewards=np.asarray(rewards, np.float32), termination=termination,
            resign_disabled=log.resign_disabled, resign_would_have=log.would_resign,
            param_versions=np.asarray([log.first_version, version], np.int64), created=time.time(),
            partner=partner, partner_player=partner_player,
        )
