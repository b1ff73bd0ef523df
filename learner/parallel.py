"""Data parallelism over a host's devices: the train state replicated, each batch split.

    replicated, split = data_parallel(devices=0, batch_size=256, field="learner")
    state = jax.device_put(state, replicated)
    state, metrics = step(state, jax.device_put(batch, split))

The jitted step is unchanged: XLA (GSPMD) sees a [B, ...] batch split along B and all-reduces what
the step sums over it (gradients, batch-norm statistics, metrics), so the update is the one-device
update up to summation order. Used by the self-play learner (`learner.devices`), the students
(`train.devices`) and the warm start (`warm_start.devices`).
"""
from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def data_parallel(devices: int, batch_size: int, field: str = "train") -> tuple[NamedSharding, NamedSharding]:
    """(replicated, batch-split) shardings over the first `devices` of jax.devices() (0: all of
    them). `field` names the config block in the errors (e.g. "learner" -> learner.devices)."""
    available = jax.devices()
    count = devices or len(available)
    if count > len(available):
        raise ValueError(f"{field}.devices={devices} but only {len(available)} {available[0].platform} "
                         f"device(s) are visible (set {field}.devices=0 for all of them)")
    if batch_size % count:
        raise ValueError(f"{field}.batch_size={batch_size} does not split over {count} devices: use a "
                         f"multiple of {count} or set {field}.devices")
    mesh = Mesh(np.array(available[:count]), ("data",))
    return NamedSharding(mesh, PartitionSpec()), NamedSharding(mesh, PartitionSpec("data"))


def describe(sharding: NamedSharding) -> str:
    """The devices a sharding spans, e.g. "cuda:0" or "cuda:0,cuda:1" (for logs and run summaries)."""
    return ",".join(f"{d.platform}:{d.id}" for d in sharding.mesh.devices.flat)
