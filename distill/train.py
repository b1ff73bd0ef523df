"""One trainer for AV, SV and BC students: Adam with gradient clipping, EMA parameters for
evaluation, the training state saved with resume, TensorBoard scalars, a progress bar.

Writes into train.out_dir:
    state/            the training state {params, ema, opt_state, step} with the seconds spent (orbax,
                      learner.Checkpointer: resume from the latest readable, a damaged one set aside)
    student/          the EMA parameters as a network directory (models/network_dir.py; what the
                      av:/sv:/bc: agents of arena/ load), its metadata naming the target
    tb/               TensorBoard: train/loss, train/learning_rate, train/steps_per_second, test/loss
    config.yaml       the DistillConfig of the run;  train.json  the summary (steps, steps/s, losses)
"""
from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import yaml
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from tensorboardX import SummaryWriter

from configs import to_dict
from distill import dataset, student
from distill.losses import loss_fn
from distill.records import RecordStore
from distill.student import STUDENT_DIR
from learner import Checkpointer, data_parallel
from models import make_student, network_dir
from runtime import raise_if_stop_requested


def make_optimizer(cfg) -> optax.GradientTransformation:
    return optax.chain(optax.clip_by_global_norm(cfg.grad_clip), optax.adam(cfg.learning_rate))


def make_step(module, net_cfg, target: str, loss_kind: str, tx, ema_decay: float,
              best_move_weight: float = 0.0):
    """The jitted update: (state, batch, lr_scale) -> (state, loss). `lr_scale` multiplies the
    optimizer's update (Adam's step is linear in its learning rate, so this is the scheduled rate
    without a schedule inside the optimizer state: checkpoints keep one layout for every schedule)."""

    def step(state, batch, lr_scale=1.0):
        def loss_of(params):
            pred = student.predict(module, net_cfg, {"params": params}, batch, target)
            return loss_fn(pred, batch, target, loss_kind, best_move_weight)

        loss, grads = jax.value_and_grad(loss_of)(state["params"])
        updates, opt_state = tx.update(grads, state["opt_state"], state["params"])
        updates = jax.tree.map(lambda u: u * lr_scale, updates)
        params = optax.apply_updates(state["params"], updates)
        ema = optax.incremental_update(params, state["ema"], 1.0 - ema_decay)
        return {"params": params, "ema": ema, "opt_state": opt_state,
                "step": state["step"] + 1}, loss

    return jax.jit(step)


def lr_scale(schedule: str, progress: float) -> float:
    """The learning-rate multiplier at `progress` in [0, 1] of the run's budget: 1 for "constant",
    half a cosine from 1 to 0 for "cosine"."""
    if schedule == "constant":
        return 1.0
    return 0.5 * (1.0 + math.cos(math.pi * min(max(progress, 0.0), 1.0)))


def budget_progress(step: int, max_steps: int, seconds: float, max_seconds: float) -> float:
    """How far the run is through its budget: the larger of the step and wall-clock fractions (the
    run stops at whichever ends first)."""
    by_time = seconds / max_seconds if max_seconds else 0.0
    return max(step / max_steps, by_time)


def make_eval_loss(module, net_cfg, target: str, loss_kind: str, best_move_weight: float = 0.0):
    return jax.jit(lambda params, batch: loss_fn(
        student.predict(module, net_cfg, {"params": params}, batch, target), batch, target, loss_kind,
        best_move_weight))


def initial_state(module, net_cfg, target: str, tx, seed: int) -> dict:
    """A fresh training state {params, ema, opt_state, step} (what `state/` checkpoints hold)."""
    params = module.init(jax.random.PRNGKey(seed), **_init_kwargs(net_cfg, target))["params"]
    return {"params": params, "ema": params, "opt_state": tx.init(params), "step": jnp.zeros((), jnp.int32)}


def state_checkpointer(directory: Path) -> Checkpointer:
    """The last two training states of a student or warm start (`out_dir/state/`); a damaged newest
    one is set aside and the one before it restored."""
    return Checkpointer(directory, keep=2, since="the steps since are trained again",
                        fresh_start="rerun to train from step 0")


def _jnp(batch: dict) -> dict:
    return {k: jnp.asarray(v) for k, v in batch.items()}


def train(cfg) -> dict:
    """Trains the student of `cfg` (a DistillConfig); returns the summary written to train.json."""
    d, t = cfg.data, cfg.train
    store = RecordStore(d.records)
    train_ex = dataset.load_examples(store, store.split("train", d.test_fraction), d.sv_from)
    test_ex = dataset.load_examples(store, store.split("test", d.test_fraction)[:2000], d.sv_from)
    if len(train_ex) == 0:
        raise ValueError(f"no training records in {d.records} (test_fraction {d.test_fraction})")
    net_cfg = student.network_config(cfg.student, d.target)
    module = make_student(net_cfg)
    out = Path(t.out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False))

    tx = make_optimizer(t)
    state = initial_state(module, net_cfg, d.target, tx, t.seed)
    with state_checkpointer(out / "state") as checkpoints:
        resumed = checkpoints.restore_latest(state)
        state, spent = (resumed[0], float(resumed[1]["seconds"])) if resumed else (state, 0.0)
        replicated, split = data_parallel(t.devices, t.batch_size)
        state = jax.device_put(state, replicated)
        start_step = int(state["step"])
        step_fn = make_step(module, net_cfg, d.target, t.loss, tx, t.ema_decay, t.best_move_weight)
        eval_loss = make_eval_loss(module, net_cfg, d.target, t.loss, t.best_move_weight)
        rng = np.random.default_rng([t.seed, start_step])  # a resumed run draws fresh batches
        sample = lambda ex: dataset.sample_batch(ex, d.target, rng, t.batch_size, net_cfg.family,
                                                 d.sampler, d.bc_soft)
        if net_cfg.family == "chessformer":  # encode every board once, before the clock starts
            train_ex.encode_squares()
        writer = SummaryWriter(str(out / "tb"))
        losses, start, step = [], time.time(), start_step
        compiled_at, compiled_step = start, start_step
        speed = lambda: (step - compiled_step) / max(time.time() - compiled_at, 1e-9)  # steps/s after the compile
        columns = [TextColumn(f"train {d.target}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TextColumn("loss {task.fields[loss]}")]
        # a log file or a batch job's output has no live bar: one plain line per checkpoint instead
        plain = t.progress and not sys.stdout.isatty()
        with Progress(*columns, disable=not t.progress or plain) as progress:
            task = progress.add_task("train", total=t.max_steps, completed=start_step, loss="-")
            while step < t.max_steps and not (t.max_seconds and spent + time.time() - start > t.max_seconds):
                scale = lr_scale(t.lr_schedule, budget_progress(step, t.max_steps, spent + time.time() - start,
                                                                t.max_seconds))
                raise_if_stop_requested()  # a signal whose KeyboardInterrupt a gc callback swallowed
                state, loss = step_fn(state, jax.device_put(sample(train_ex), split), scale)
                step += 1
                if step == start_step + 1:  # steps/s excludes the first step (jit compilation)
                    jax.block_until_ready(loss)
                    compiled_at, compiled_step = time.time(), step
                if step % t.log_every == 0 or step == t.max_steps:
                    loss = float(loss)
                    losses.append(loss)
                    writer.add_scalar("train/loss", loss, step)
                    writer.add_scalar("train/learning_rate", t.learning_rate * scale, step)
                    writer.add_scalar("train/steps_per_second", speed(), step)
                    progress.update(task, completed=step, loss=f"{loss:.4f}")
                if step % t.checkpoint_every == 0:
                    if step < t.max_steps:  # the last step's is saved below, with all of this session's seconds
                        # with the seconds spent so far: max_seconds is the whole run's budget, over its sessions
                        checkpoints.save(state, {"seconds": spent + time.time() - start})
                    if plain:
                        print(_log_line(d.target, step, t, losses, spent + time.time() - start, speed()), flush=True)
        jax.block_until_ready(state)
        seconds = time.time() - start
        steps_per_second = speed()
        checkpoints.save(state, {"seconds": spent + seconds})  # nothing when step's is saved already
    test_loss = None
    if len(test_ex):
        test_loss = float(np.mean([eval_loss(state["ema"], jax.device_put(sample(test_ex), split))
                                   for _ in range(4)]))
        writer.add_scalar("test/loss", test_loss, step)
    writer.close()
    metadata = {"target": d.target, "loss": t.loss, "num_bins": cfg.student.num_bins,
                "steps": step, "records": str(d.records)}
    network_dir.save(out / STUDENT_DIR, net_cfg, {"params": state["ema"]}, metadata=metadata)
    summary = {"target": d.target, "family": net_cfg.family, "steps": step,
               "new_steps": step - start_step, "seconds": seconds, "total_seconds": spent + seconds,
               "steps_per_second": steps_per_second, "examples_per_second": steps_per_second * t.batch_size,
               "train_boards": len(train_ex), "train_pairs": int(len(train_ex.pair_board)),
               # (board, move) values learnt per second: AV one per example, AV-all a board's moves
               "move_values_per_second": _move_values_per_second(d.target, train_ex, steps_per_second * t.batch_size),
               "final_train_loss": losses[-1] if losses else None, "test_loss_ema": test_loss,
               "batch_size": t.batch_size, "devices": replicated.mesh.size,
               "student": str(out / STUDENT_DIR)}
    (out / "train.json").write_text(json.dumps(summary, indent=1))
    return summary


def _log_line(target: str, step: int, t, losses: list, seconds: float, steps_per_second: float) -> str:
    """One plain progress line: step, last logged loss, speed, wall time against the budget."""
    loss = f"{losses[-1]:.4f}" if losses else "-"
    budget = f" of {t.max_seconds:.0f}" if t.max_seconds else ""
    return (f"train {target}: step {step}/{t.max_steps}, loss {loss}, {steps_per_second:.1f} steps/s, "
            f"{seconds:.0f}{budget} s")


def _move_values_per_second(target: str, ex, examples_per_second: float):
    if target == "av":
        return examples_per_second
    if target == "av_all":
        return examples_per_second * len(ex.pair_board) / max(len(ex), 1)
    return None


def _init_kwargs(net_cfg, target: str) -> dict:
    batch = student.example_batch(net_cfg, target)
    if net_cfg.family == "searchless":
        return {"tokens": batch["inputs"]}
    return {"squares": batch["inputs"], "is_black": batch["is_black"]}
