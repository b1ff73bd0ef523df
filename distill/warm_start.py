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
plays with. One caveat: a FEN has no move history, so the history planes of the observation are
empty in these examples; self-play fills them from its first game on.

Writes into warm_start.out_dir:
    network/          the network directory (models/checkpoint.py) that `init.network` reads
    warm_start.json   steps, examples/s, train loss, held-out move accuracy and value error
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import games
import models
from configs.loader import load, to_dict
from distill.dataset import best_move
from distill.records import RecordStore
from games.chess_bridge import fen_to_state, uci_to_pgx_action
from learner.parallel import data_parallel
from learner.train import init_train_state, legal_log_probs, make_train_step
from models import checkpoint as network_checkpoint
from replay.messages import TrainingBatch
from runtime.signals import raise_if_stop_requested


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
    obs, legal = None, np.full((n, width), -1, np.int32)
    policy, best, z = np.zeros((n, width), np.float32), np.zeros(n, np.int32), np.zeros(n, np.float32)
    for row, i in enumerate(indices):
        rec = store[int(i)]
        state = fen_to_state(rec["fen"])
        o = np.asarray(state.observation, np.float16)
        if obs is None:
            obs = np.zeros((n, *o.shape), np.float16)
        obs[row] = o
        white = " w " in rec["fen"]
        actions = [uci_to_pgx_action(m, white) for m in rec["moves"]]
        legal[row, :len(actions)] = actions
        b = rec["moves"].index(best_move(rec))
        policy[row, :len(actions)] = (_record_policy(rec) if soft else
                                      policy_target(np.asarray(rec["values"], np.float32), b, temperature))
        best[row], z[row] = b, 2.0 * float(_record_value(rec, value_from)) - 1.0
    if obs is None:
        raise ValueError(f"no records in {store.dir} for this split")
    return Boards(obs, legal, policy, best, z)


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
    from selfplay.config import SelfPlayConfig
    cfg = load(SelfPlayConfig, path, list(overrides))
    if cfg.game != "chess":
        raise ValueError(f"warm_start.selfplay {path} plays {cfg.game}: warm starts are for chess")
    return cfg


def evaluate(net, variables, boards: Boards, batch_size: int = 256) -> dict:
    """Held-out move accuracy (argmax over legal moves == the record's best) and value MSE."""
    apply = jax.jit(lambda v, o: net.apply(v, o, train=False))
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
    game = games.make(sp.game)
    net = models.make_network(sp.network, game.spec)
    store = RecordStore(d.records)
    train_idx = store.split("train", d.test_fraction)
    if w.max_boards:
        train_idx = train_idx[:w.max_boards]
    width = game.spec.max_legal_actions
    t0 = time.time()
    targets = dict(temperature=w.policy_temperature, soft=d.bc_soft, value_from=d.sv_from)
    train = load_boards(store, train_idx, width, **targets)
    test = load_boards(store, store.split("test", d.test_fraction)[:2000], width, **targets)
    load_seconds = time.time() - t0
    learner = dataclasses.replace(sp.learner, batch_size=w.batch_size, lr_values=(w.learning_rate,),
                                  lr_boundaries=(), q_ratio=0.0)
    replicated, split = data_parallel(w.devices, w.batch_size, "warm_start")
    state = jax.device_put(init_train_state(net, learner, jnp.asarray(train.observation[:1], jnp.float32),
                                            jax.random.PRNGKey(w.seed)), replicated)
    step_fn = make_train_step(net, learner)
    rng = np.random.default_rng(w.seed)
    losses, start, step = [], time.time(), 0
    compiled_at = start
    while step < w.max_steps and not (w.max_seconds and time.time() - start > w.max_seconds):
        raise_if_stop_requested()  # a signal whose KeyboardInterrupt a gc callback swallowed
        batch = jax.device_put(train.batch(rng.integers(0, len(train), w.batch_size)), split)
        state, metrics = step_fn(state, batch)
        step += 1
        if step == 1:
            jax.block_until_ready(metrics["loss"])
            compiled_at = time.time()
        if step % w.log_every == 0:
            losses.append({k: float(metrics[k]) for k in ("loss", "policy_loss", "value_loss")})
            if w.progress:
                print(f"warm-start step {step}: " + " ".join(f"{k} {v:.3f}" for k, v in losses[-1].items()),
                      flush=True)
    jax.block_until_ready(state.params)
    rate = (step - 1) / max(time.time() - compiled_at, 1e-9) if step > 1 else 0.0
    variables = {"params": jax.device_get(state.params), "batch_stats": jax.device_get(state.batch_stats)}
    out = Path(w.out_dir)
    metadata = {"warm_start": {"records": str(d.records), "steps": step, "train_boards": len(train),
                               "policy_temperature": w.policy_temperature, "bc_soft": d.bc_soft,
                               "sv_from": d.sv_from, "selfplay_set": list(w.selfplay_set)},
                "search": to_dict(sp.search)}  # mcts:net= plays the preset's search, as a run's network
    network_checkpoint.save(out / "network", sp.network, variables, game=sp.game, metadata=metadata)
    summary = {"network": str(out / "network"), "selfplay": w.selfplay, "selfplay_set": list(w.selfplay_set),
               "family": sp.network.family, "parameters": _count(variables["params"]), "steps": step,
               "devices": replicated.mesh.size,
               "seconds": time.time() - start, "load_seconds": load_seconds,
               "examples_per_second": rate * w.batch_size, "train_boards": len(train),
               "last": losses[-1] if losses else None,
               "test": evaluate(net, variables, test), "train_sample": evaluate(net, variables, _head(train))}
    (out / "warm_start.json").write_text(json.dumps(summary, indent=1))
    return summary


def _count(params) -> int:
    return int(sum(np.size(x) for x in jax.tree.leaves(params)))


def _head(boards: Boards, n: int = 2000) -> Boards:
    return Boards(*(getattr(boards, f.name)[:n] for f in dataclasses.fields(Boards)))
