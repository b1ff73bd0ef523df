"""The self-play run: Ray actors generate games, the replay buffer keeps them, the learner trains.

    summary = run(cfg, resume=False, ray_address=None)

The learner lives in this (driver) process. It trains only while
    samples trained <= learner.train_ratio * positions generated
so it neither overfits a small buffer nor starves, publishes variables every `publish_every` steps,
checkpoints every `checkpoint_every` steps and on exit (Ctrl-C included) to checkpoints/ (orbax:
the full TrainState) and network/ (models/checkpoint.py: what arena/ loads), and writes TensorBoard
scalars. A resumed run restores the learner checkpoint (params, optimizer, step, RNG, counters) and
the replay window from its chunk files; games in progress at the stop are not kept.
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import jax
import numpy as np
import ray
import yaml

import games
import models
from models import checkpoint as network_checkpoint
from actors.selfplay_actor import SelfPlayActor
from configs.loader import to_dict
from learner.checkpoint import Checkpointer
from learner.parameter_store import ParameterStore
from learner.progress import Progress
from learner.selfplay_config import SelfPlayConfig
from learner.train import TrainState, init_train_state, make_train_step
from replay.buffer import ReplayBuffer
from replay.record import decode


class RunError(RuntimeError):
    """A run that cannot start as asked (existing run without --resume, nothing to resume, ...)."""


def run_dir_of(cfg: SelfPlayConfig) -> Path:
    return Path(cfg.runs_dir) / cfg.name


def _prepare_run_dir(cfg: SelfPlayConfig, resume: bool) -> Path:
    run_dir = run_dir_of(cfg)
    started = (run_dir / "config.yaml").exists()
    if started and not resume:
        raise RunError(f"{run_dir} already holds a run: pass --resume to continue it or choose another name")
    if resume and not started:
        raise RunError(f"nothing to resume in {run_dir} (no config.yaml)")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False))
    return run_dir


def _init_ray(cfg: SelfPlayConfig, address: str | None) -> bool:
    """Connects to `address` or starts a small local Ray; returns whether we started it."""
    if ray.is_initialized():
        return False
    if address:
        ray.init(address=address, log_to_driver=True)
    else:
        ray.init(num_cpus=cfg.ray_num_cpus, include_dashboard=False, log_to_driver=True,
                 object_store_memory=cfg.ray_object_store_mb * 1024 * 1024)
    return True


def _sample_seed(state: TrainState) -> int:
    rng = np.asarray(jax.device_get(state.rng), np.uint64)
    return int((rng[0] * 1_000_003 + rng[1] * 7919 + int(state.step)) % (2**63))


def _append_pgn(run_dir: Path, frame: bytes) -> None:
    """Appends one finished chess game to games.pgn (python-chess via games/chess_bridge)."""
    from games import chess_bridge

    record = decode(frame)
    white_reward = record.rewards[int(record.to_play[0])] if record.plies else 0.0  # white moves first
    result = "1-0" if white_reward > 0 else "0-1" if white_reward < 0 else "1/2-1/2"
    game = chess_bridge.actions_to_pgn(
        record.actions.tolist(), result=result,
        headers={"Event": "zerochess self-play", "Round": record.game_id, "Termination": record.termination,
                 "White": f"zerochess v{record.param_versions[0]}", "Black": f"zerochess v{record.param_versions[1]}"})
    with open(run_dir / "games.pgn", "a") as f:
        print(game, file=f, end="\n\n")


def run(cfg: SelfPlayConfig, resume: bool = False, ray_address: str | None = None,
        show_progress: bool | None = None) -> dict:
    """Runs self-play + training until max_steps / max_minutes / Ctrl-C; returns a summary dict."""
    run_dir = _prepare_run_dir(cfg, resume)
    game = games.make(cfg.game)
    net = models.make_network(cfg.network, game.spec)
    obs0 = game.observe(game.init(jax.random.split(jax.random.PRNGKey(cfg.seed), 1)))
    state = init_train_state(net, cfg.learner, obs0, jax.random.PRNGKey(cfg.seed))
    checkpointer = Checkpointer(run_dir / "checkpoints", cfg.learner.keep_checkpoints)
    meta = {"samples_trained": 0, "games_at_start": 0}
    restored = checkpointer.restore_latest(state) if resume else None
    if restored is not None:
        state, meta = restored
    train_step = make_train_step(net, cfg.learner)
    started_ray = _init_ray(cfg, ray_address)
    progress = Progress(run_dir / "tb", cfg, show_progress)
    try:
        return _loop(cfg, run_dir, game, state, meta, train_step, checkpointer, progress)
    finally:
        progress.close()
        checkpointer.close()
        if started_ray:
            ray.shutdown()


def _variables(state: TrainState):
    return jax.device_get({"params": state.params, "batch_stats": state.batch_stats})


def _loop(cfg, run_dir, game, state, meta, train_step, checkpointer, progress) -> dict:
    store = ray.remote(ParameterStore).options(num_cpus=0).remote()
    ray.get(store.publish.remote(int(state.step), _variables(state)))
    replay = ray.remote(ReplayBuffer).options(num_cpus=0).remote(
        str(run_dir / "replay"), cfg.replay, game.spec.num_actions, game.spec.max_legal_actions)
    stats = ray.get(replay.stats.remote())
    positions_total, games_total = stats["positions_total"], stats["games_total"]
    games_at_start = games_total
    actor_cls = ray.remote(SelfPlayActor)
    actors = [actor_cls.options(num_cpus=cfg.actors.num_cpus, num_gpus=cfg.actors.num_gpus,
                                scheduling_strategy="SPREAD").remote(
                  i, cfg.game, cfg.network, cfg.search, cfg.actors, replay, store,
                  cfg.seed * 1000 + int(state.step) + i)
              for i in range(cfg.actors.num_actors)]
    plays = {a.play.remote(cfg.actors.plies_per_call): a for a in actors}
    samples_trained = int(meta.get("samples_trained", 0))
    B = cfg.learner.batch_size
    start = time.monotonic()
    sample_ref, metrics, last_log = None, {}, 0.0
    next_pgn = (games_total // cfg.sample_game_every + 1) * cfg.sample_game_every
    stop_reason = "interrupted"
    nodes = set()

    def save():
        checkpointer.save(state, {"samples_trained": samples_trained, "games_total": games_total,
                                  "positions_total": positions_total})
        # The network alone, for arena/ and uci.py (models/checkpoint.py format).
        network_checkpoint.save(run_dir / "network", cfg.network, _variables(state), game=cfg.game,
                                metadata={"step": int(state.step), "run": cfg.name})

    try:
        while True:
            # 1. collect finished actor calls and restart them
            can_train = (positions_total >= cfg.replay.min_positions
                         and samples_trained + B <= cfg.learner.train_ratio * positions_total)
            done, _ = ray.wait(list(plays), num_returns=1, timeout=0 if can_train else 0.2)
            for ref in done:
                actor = plays.pop(ref)
                result = ray.get(ref)
                games_total += result["games"]
                positions_total += sum(result["game_plies"])
                nodes.add(result.get("node", ""))
                progress.games_finished(result)
                plays[actor.play.remote(cfg.actors.plies_per_call)] = actor
            # 2. train while the ratio allows
            if can_train:
                if sample_ref is None:
                    sample_ref = replay.sample.remote(B, _sample_seed(state))
                batch = ray.get(sample_ref)
                state, metrics = train_step(state, batch)
                samples_trained += B
                sample_ref = replay.sample.remote(B, _sample_seed(state))  # prefetch the next batch
                step = int(state.step)
                progress.trained(step, B)
                if step % cfg.learner.publish_every == 0:
                    store.publish.remote(step, _variables(state))
                if step % cfg.learner.checkpoint_every == 0:
                    save()
            # 3. logs, sample games, stop conditions
            now = time.monotonic()
            if now - last_log >= min(cfg.log_every_seconds, 1.0):
                last_log = now
                progress.update(int(state.step), jax.device_get(metrics), ray.get(replay.stats.remote()))
            if games_total >= next_pgn and cfg.game == "chess":
                next_pgn += cfg.sample_game_every
                _append_pgn(run_dir, ray.get(replay.recent_games.remote(1))[0])
            if cfg.learner.max_steps and int(state.step) >= cfg.learner.max_steps:
                stop_reason = "max_steps"
                break
            if cfg.max_minutes and now - start >= 60 * cfg.max_minutes:
                stop_reason = "max_minutes"
                break
    except KeyboardInterrupt:
        stop_reason = "interrupted"
    finally:
        save()
        progress.update(int(state.step), jax.device_get(metrics), None)
    try:  # after Ctrl-C the local Ray processes may be gone already; the checkpoint is saved
        final = ray.get(replay.stats.remote(), timeout=60)
        if cfg.freeze_corpus_on_exit:
            ray.get(replay.freeze.remote(str(run_dir / "corpus")))
        ray.get(replay.close.remote(), timeout=60)
        for a in actors:
            ray.kill(a)
    except (ray.exceptions.RayError, KeyboardInterrupt):
        final = {"games_total": games_total, "positions_total": positions_total}
    return {
        "stop_reason": stop_reason, "step": int(state.step), "samples_trained": samples_trained,
        "games_total": final["games_total"], "positions_total": final["positions_total"],
        "games_this_session": final["games_total"] - games_at_start,
        "reloaded_games": games_at_start, "metrics": {k: float(v) for k, v in jax.device_get(metrics).items()},
        "seconds": time.monotonic() - start, "actor_nodes": sorted(n for n in nodes if n),
    }
