"""Warm start for self-play: distil annotated boards into the self-play network family.

    python distill.py warm-start --config configs/distill_cpu.yaml
    python selfplay.py --config configs/chess_cpu.yaml --set init.network=runs/distill/warm_start/network

The network of `warm_start.selfplay` (a self-play preset: its `network` block, e.g. chess_cpu's
ResNet 2x32) learns from the records of `data.records` (Stockfish annotations or a frozen corpus):
the policy head imitates the record's best move (or a softmax of its move values; with
`data.bc_soft` a self-play corpus's own policy target), the value head its win probability mapped
to [-1, 1] (`data.sv_from`: the record's value, or the game's outcome). `warm_start.selfplay_set`
changes that preset's network (`[network.family=chessformer, ...]`): the same command trains a
searchless Chessformer student (policy + value) on a frozen self-play corpus, which `match.py`
plays as `policy:net=DIR` against its teacher. The loss and optimiser are the self-play learner's
(learner/train.py), so the network, its batch statistics and its input are exactly what a run
plays with. A FEN has no move history, so the warm-started network reads none (`network.history:
false`, games/features.py drop_history): it sees a game's positions in play as it saw the boards in
training, and a run from it (`init.network`) sets `network.history=false` too.

Writes into warm_start.out_dir:
    state/            the training state (learner/checkpoint.py), every checkpoint_minutes and at the
                      end: a rerun of the same command resumes it (max_seconds spans every session)
    network/          the network directory (models/network_dir.py) that `init.network` reads; a ResNet's
                      value with its side-to-move offset removed (distill/calibrate.py, calibrate_boards)
    warm_start.json   steps, examples/s, train loss, held-out move accuracy and value error (of that network)
"""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import games
import models
from configs import load, to_dict
from distill.calibrate import calibrated
from distill.dataset import best_move
from distill.records import RecordStore, fixed_sample
from distill.train import state_checkpointer
from games import chess_bridge, chess_observation
from learner import (
    TrainMetrics,
    ValueHealthMonitor,
    data_parallel,
    init_train_state,
    legal_log_probs,
    make_train_step,
)
from models import network_dir
from replay import TrainingBatch
from runtime import raise_if_stop_requested


@dataclasses.dataclass
class Boards:
    """Annotated boards as the self-play learner's inputs; N boards, W legal-move slots."""

    observation: np.ndarray  # [N, 8, 8, 119] float16 (pgx observation, no history)
    legal_actions: np.ndarray  # [N, W] int32 pgx ids, -1 pads
    policy: np.ndarray  # [N, W] float32 target over those moves
    best: np.ndarray  # [N] int32 slot of the record's best move
    z: np.ndarray  # [N] float32 value target for the side to move, in [-1, 1]

    def __len__(self) -> int:
        return len(self.z)

    def batch(self, rows: np.ndarray) -> TrainingBatch:
        return TrainingBatch(jnp.asarray(self.observation[rows], jnp.float32),
                             jnp.asarray(self.legal_actions[rows]), jnp.asarray(self.policy[rows]),
                             jnp.asarray(self.z[rows]))


_LOAD_CHUNK = 8 * chess_bridge.FENS_CHUNK  # records read per batched conversion


def policy_target(values: np.ndarray, best: int, temperature: float) -> np.ndarray:
    """[M] target over a record's moves: one-hot on `best` (temperature 0) or softmax(values / T)."""
    if temperature <= 0:
        return np.eye(len(values), dtype=np.float32)[best]
    logits = (values - values.max()) / temperature
    p = np.exp(logits)
    return (p / p.sum()).astype(np.float32)


def load_boards(store: RecordStore, indices, width: int, temperature: float, soft: bool = False,
                value_from: str = "value") -> Boards:
    """Reads records `indices` into learner inputs (one pgx state per FEN). `soft`: the policy target
    is the record's `policy` (a self-play corpus: the search's target over `moves`); `value_from`:
    the value target is the record's `value` (oracle or root value) or its game `outcome`."""
    n = len(indices)
    if not n:
        raise ValueError(f"no records in {store.dir} for this split")
    obs, legal = None, np.full((n, width), -1, np.int32)
    policy, best, z = np.zeros((n, width), np.float32), np.zeros(n, np.int32), np.zeros(n, np.float32)
    for start in range(0, n, _LOAD_CHUNK):
        rows = range(start, min(start + _LOAD_CHUNK, n))
        records = [store[int(indices[row])] for row in rows]
        o = chess_observation.boards_to_observations([chess_bridge.parse_fen(rec["fen"]) for rec in records]).astype(np.float16)
        if obs is None:
            obs = np.zeros((n, *o.shape[1:]), np.float16)
        obs[rows.start:rows.stop] = o
        for row, rec in zip(rows, records):
            white = " w " in rec["fen"]
            actions = [chess_bridge.uci_to_pgx_action(m, white) for m in rec["moves"]]
            legal[row, :len(actions)] = actions
            b = rec["moves"].index(best_move(rec))
            policy[row, :len(actions)] = (_record_policy(rec) if soft else
                                          policy_target(np.asarray(rec["values"], np.float32), b, temperature))
            best[row], z[row] = b, 2.0 * float(_record_value(rec, value_from)) - 1.0
    return Boards(obs, legal, policy, best, z)


def successor_boards(store: RecordStore, indices, width: int, per_board: int, seed: int = 0) -> Boards:
    """Value-only boards one ply below the records: for each record, the positions after `per_board`
    of its moves drawn uniformly without replacement, each valued 1 - that move's win probability (the
    side to move there is the opponent), with its own legal moves and no policy target (a zero target's
    cross entropy is zero). A search values its root's moves by these boards, bad moves as well as
    good, so the value learns what a hung piece costs from Stockfish's own move values; game positions
    alone are mostly balanced. A move that ends the game is skipped (the search scores it by the rules;
    pgx's rules decide, so a successor at the 50-move rule is one too)."""
    rng = np.random.default_rng(seed)
    fens, values = [], []
    for i in indices:
        rec = store[int(i)]
        board = chess_bridge.parse_fen(rec["fen"])
        for m in rng.permutation(len(rec["moves"]))[:per_board]:
            board.push_uci(rec["moves"][m])
            if not board.is_game_over(claim_draw=False):
                fens.append(board.fen())
                values.append(1.0 - float(rec["values"][m]))
            board.pop()
    obs, legal, z = [], [], []
    for start in range(0, len(fens), _LOAD_CHUNK):
        states = chess_bridge.fens_to_states(fens[start:start + _LOAD_CHUNK])
        live = ~np.asarray(states.terminated)  # pgx ends a game python-chess does not (the 50-move rule)
        obs.append(np.asarray(states.observation, np.float16)[live])
        for mask in np.asarray(states.legal_action_mask)[live]:
            actions = np.flatnonzero(mask)
            legal.append(np.pad(actions, (0, width - len(actions)), constant_values=-1))
        z.extend(2.0 * np.asarray(values[start:start + _LOAD_CHUNK], np.float32)[live] - 1.0)
    if not z:
        raise ValueError(f"no successor boards in {store.dir} for this split")
    return Boards(np.concatenate(obs), np.stack(legal).astype(np.int32), np.zeros((len(z), width), np.float32),
                  np.zeros(len(z), np.int32), np.asarray(z, np.float32))


def concat(*parts: Boards) -> Boards:
    return Boards(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in dataclasses.fields(Boards)))


def _record_policy(rec: dict) -> np.ndarray:
    if rec.get("policy") is None:
        raise ValueError(f"record {rec.get('game')}/{rec.get('ply')} has no policy (Stockfish annotations "
                         "have none): data.bc_soft needs a frozen self-play corpus")
    p = np.asarray(rec["policy"], np.float32)
    return p / p.sum()


def _record_value(rec: dict, value_from: str) -> float:
    if value_from not in ("value", "outcome"):
        raise ValueError(f"data.sv_from must be 'value' or 'outcome', got {value_from!r}")
    if rec.get(value_from) is None:
        raise ValueError(f"record {rec.get('game')}/{rec.get('ply')} has no {value_from!r} "
                         "(Stockfish annotations have no outcome): use data.sv_from=value")
    return rec[value_from]


def selfplay_preset(path: str, overrides=()):
    from selfplay import SelfPlayConfig
    cfg = load(SelfPlayConfig, path, list(overrides))
    if cfg.game != "chess":
        raise ValueError(f"warm_start.selfplay {path} plays {cfg.game}: warm starts are for chess")
    return cfg


def evaluate(net, variables, boards: Boards, batch_size: int = 256) -> dict:
    """Held-out move accuracy (argmax over legal moves == the record's best) and value MSE."""
    apply = jax.jit(models.evaluation_fn(net))
    hits, sq = 0, 0.0
    for s in range(0, len(boards), batch_size):
        rows = np.arange(s, min(s + batch_size, len(boards)))
        out = apply(variables, jnp.asarray(boards.observation[rows], jnp.float32))
        log_p, valid = legal_log_probs(out.policy_logits, jnp.asarray(boards.legal_actions[rows]))
        guess = np.asarray(jnp.argmax(jnp.where(valid, log_p, -jnp.inf), axis=-1))
        hits += int((guess == boards.best[rows]).sum())
        sq += float(((np.asarray(out.value, np.float32) - boards.z[rows]) ** 2).sum())
    return {"move_accuracy": hits / len(boards), "value_mse": sq / len(boards), "boards": len(boards)}


def warm_start(cfg) -> dict:
    """Trains the self-play network of `cfg.warm_start.selfplay` on `cfg.data.records`; returns
    the summary written to warm_start.json."""
    w, d = cfg.warm_start, cfg.data
    sp = selfplay_preset(w.selfplay, w.selfplay_set)
    sp = dataclasses.replace(sp, network=dataclasses.replace(sp.network, history=False))  # FENs have none
    game = games.make(sp.game)
    net = models.make_network(sp.network, game.spec)
    store = RecordStore(d.records)
    train_idx = store.split("train", d.test_fraction)
    if w.max_boards:
        train_idx = train_idx[:w.max_boards]
    width = game.spec.max_legal_actions
    t0 = time.time()
    targets = dict(temperature=w.policy_temperature, soft=d.bc_soft, value_from=d.sv_from)
    parents = load_boards(store, train_idx, width, **targets)
    train = parents  # and their successors, value-only (move accuracy is the parents')
    if w.successor_boards:
        train = concat(parents, successor_boards(store, train_idx, width, w.successor_boards, w.seed))
    test = load_boards(store, fixed_sample(store.split("test", d.test_fraction), 2000), width, **targets)
    load_seconds = time.time() - t0
    out = Path(w.out_dir)
    replicated, split = data_parallel(w.devices, w.batch_size, "warm_start")
    sample_obs = jnp.asarray(train.observation[:1], jnp.float32)
    with state_checkpointer(out / "state") as checkpoints:
        state, spent, meta = _start_or_resume(checkpoints, net, sp, w, sample_obs)
        health, last = ValueHealthMonitor.from_meta(meta, VALUE_CHECK, sp.network.value_reads_input), None
        state = jax.device_put(state, replicated)
        start_step = int(state.step)
        lr, step_fn = None, None
        rng = np.random.default_rng([w.seed, start_step])  # a resumed run draws fresh batches
        losses, start, step = [], time.time(), start_step
        compiled_at, compiled_step, saved_at = start, start_step, start
        elapsed = lambda: spent + time.time() - start  # noqa: E731  (the budget spans every session)
        while step < w.max_steps and not (w.max_seconds and elapsed() > w.max_seconds):
            raise_if_stop_requested()  # a signal whose KeyboardInterrupt a gc callback swallowed
            if phase_lr(w, step, elapsed()) != lr:  # a new phase: the step with its rate (one compile)
                lr = phase_lr(w, step, elapsed())
                step_fn = make_train_step(net, _learner(sp.learner, w, lr))
            batch = jax.device_put(train.batch(rng.integers(0, len(train), w.batch_size)), split)
            state, metrics = step_fn(state, batch)
            step += 1
            if step == start_step + 1:
                jax.block_until_ready(metrics["loss"])
                compiled_at, compiled_step = time.time(), step
            if step % w.log_every == 0:
                losses.append({k: float(metrics[k]) for k in ("loss", "policy_loss", "value_loss")})
                last = TrainMetrics.of(jax.device_get(metrics))
                warning = health.observe(step, last)
                if w.progress:
                    print(f"warm-start step {step}: " + " ".join(f"{k} {v:.3f}" for k, v in losses[-1].items())
                          + f" value std {last.value_std:.3f} lr {last.learning_rate:.4f}", flush=True)
                if warning:
                    print(f"warm-start: {warning}", file=sys.stderr, flush=True)
            if w.checkpoint_minutes and time.time() - saved_at > 60 * w.checkpoint_minutes:
                checkpoints.save(state, {"seconds": elapsed(), **health.meta()})
                saved_at = time.time()
        checkpoints.save(state, {"seconds": elapsed(), **health.meta()})
    jax.block_until_ready(state.params)
    rate = (step - compiled_step) / max(time.time() - compiled_at, 1e-9) if step > compiled_step else 0.0
    variables = {"params": jax.device_get(state.params), "batch_stats": jax.device_get(state.batch_stats)}
    metadata = {"warm_start": {"records": str(d.records), "init_network": w.init_network, "steps": step,
                               "train_boards": len(train),
                               "successor_boards": w.successor_boards,
                               "policy_temperature": w.policy_temperature, "bc_soft": d.bc_soft,
                               "sv_from": d.sv_from, "selfplay_set": list(w.selfplay_set)},
                "search": _recorded_search(w, sp)}
    if w.calibrate_boards and sp.network.family == "resnet" and len(test):  # the side-to-move offset removed
        variables, metadata = calibrated(net, variables, sp.network.resnet.value_hidden, metadata,
                                         store, d.test_fraction, w.calibrate_boards)
    network_dir.save(out / "network", sp.network, variables, game=sp.game, metadata=metadata)
    summary = {"network": str(out / "network"), "init_network": w.init_network, "selfplay": w.selfplay,
               "selfplay_set": list(w.selfplay_set),
               "family": sp.network.family, "parameters": _count(variables["params"]), "steps": step,
               "new_steps": step - start_step, "final_learning_rate": lr,
               "devices": replicated.mesh.size,
               "seconds": time.time() - start, "total_seconds": spent + time.time() - start,
               "load_seconds": load_seconds,
               "examples_per_second": rate * w.batch_size, "train_boards": len(train),
               "successor_boards": len(train) - len(parents),
               "last": losses[-1] if losses else None,
               "test": evaluate(net, variables, test), "train_sample": evaluate(net, variables, _head(parents)),
               "value_health": _health(health.summary(last)),
               "value_calibration": metadata.get("value_calibration")}
    (out / "warm_start.json").write_text(json.dumps(summary, indent=1))
    return summary


# a value head that dies in a warm start does so in its first hundred steps (a seed at rate 0.02 on
# 4x64, docs/experiments/): the run says so then, not after its hour
VALUE_CHECK = ("a fresh start with another warm_start.seed or a lower warm_start.learning_rate (delete "
               "warm_start.out_dir's state/ first) (docs/distill.md#warm-start-for-self-play)")
LR_DROPS = (0.6, 0.85)  # fractions of the budget (max_steps or max_seconds) where the rate drops 10x


def phase_lr(w, step: int, seconds: float) -> float:
    """The learning rate at `step` after `seconds` of training: warm_start.learning_rate, 10x lower
    from each of LR_DROPS of the budget on (whichever of max_steps and max_seconds is nearer its end)."""
    progress = max(step / w.max_steps if w.max_steps else 0.0, seconds / w.max_seconds if w.max_seconds else 0.0)
    return w.learning_rate * 0.1 ** sum(progress >= f for f in LR_DROPS)


def _learner(base, w, lr: float):
    """The self-play learner's loss and optimiser at the warm start's batch and a constant rate, on every
    parameter (Stockfish's values teach the value head too)."""
    return dataclasses.replace(base, batch_size=w.batch_size, lr_values=(lr,), lr_boundaries=(), q_ratio=0.0,
                               trains="all")


def _start_or_resume(checkpoints, net, sp, w, sample_obs):
    """(TrainState, seconds spent, checkpoint meta): the newest checkpoint of out_dir/state, the
    training seconds of the sessions before it and what it kept, or a fresh state from `seed`, 0, {}."""
    key = jax.random.PRNGKey(w.seed)
    fresh = init_train_state(net, _learner(sp.learner, w, w.learning_rate), sample_obs, key,
                             _init_variables(w, net, sp, sample_obs, key))
    restored = checkpoints.restore_latest(fresh)
    if restored is None:
        return fresh, 0.0, {}
    state, meta = restored
    spent = float(meta.get("seconds", 0.0))
    print(f"warm-start: resumed at step {int(state.step)} ({spent / 60:.1f} minutes spent)", flush=True)
    return state, spent, meta


def _init_variables(w, net, sp, sample_obs, key) -> dict | None:
    """warm_start.init_network's variables for `net` (None: random weights); a bad one is one line."""
    if not w.init_network:
        return None
    fresh = lambda: net.init(jax.random.split(key)[0], sample_obs, train=False)  # noqa: E731
    try:
        return network_dir.variables_for(w.init_network, sp.game, sp.network, fresh)
    except (FileNotFoundError, ValueError) as e:
        raise ValueError(f"warm_start.init_network {w.init_network}: {e}") from None


def _recorded_search(w, sp) -> dict:
    """The search `mcts:net=` plays the network with: init_network's recorded one (a continued network
    plays as it did), else the preset's, as a run's network."""
    if w.init_network:
        search = network_dir.load(w.init_network).metadata.get("search")
        if search:
            return search
    return to_dict(sp.search)


def _health(health) -> dict | None:
    return None if health is None else dataclasses.asdict(health)


def _count(params) -> int:
    return int(sum(np.size(x) for x in jax.tree.leaves(params)))


def _head(boards: Boards, n: int = 2000) -> Boards:
    return Boards(*(getattr(boards, f.name)[:n] for f in dataclasses.fields(Boards)))
