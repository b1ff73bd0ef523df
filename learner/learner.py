"""The learner: holds the train state on its device(s), trains on replay samples, publishes variables.

    learner = Learner(game_name, network_cfg, learner_cfg, state, replay, store)   # in this process
    learner = ray.remote(Learner).options(num_gpus=1).remote(...)    # or on a GPU node of the cluster
    result = learner.train(num_steps)   # TrainResult(step, metrics) (learner/messages.py)
    state = learner.train_state()        # host copy of the TrainState, for checkpoints

`learner.placement` in the config picks between the two (selfplay/learners.py). `replay` is a Ray
handle whose `sample(batch_size, seed)` returns a batch (a TrainingBatch), `store` one whose
`publish(version, variables)` takes the variables: the learner knows neither class. It keeps
`prefetch_batches` sample requests in flight (sampling overlaps training; a batch arrives with its
observations bit-packed, ~1.4 KB per chess position, and is unpacked inside the jitted step on the
device), dispatches steps without waiting for them (JAX's asynchronous dispatch) and reads the
metrics once per call. Every `publish_every` steps the variables go to the parameter store, where
actors pick them up. With `learner.devices`
other than 1 the state is replicated over that many devices and each batch split between them
(learner/parallel.py): the same update, computed in parallel.
"""
from __future__ import annotations

import collections
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import ray

import games
import models
from games import material
from learner.config import LearnerConfig
from learner.messages import LearnerLocation, TrainMetrics, TrainResult
from learner.parallel import data_parallel, describe
from learner.train import TrainState, frozen_leaves, make_train_step
from runtime import stops_deferred


def sample_seed(rng: np.ndarray, step: int) -> int:
    """The replay sampling seed of the next step: a function of the learner RNG [2] and step (resumable)."""
    rng = np.asarray(rng, np.uint64)
    return int((rng[0] * 1_000_003 + rng[1] * 7919 + step) % (2**63))


class Learner:
    """Trains `state` on batches from the `replay` actor; publishes to the `store` actor."""

    def __init__(self, game_name: str, network_cfg: models.NetworkConfig, cfg: LearnerConfig,
                 state: TrainState, replay, store, start_variables: dict | None = None):
        self._cfg = cfg
        self._replicated, self._split = data_parallel(cfg.devices, cfg.batch_size, "learner")
        game = games.make(game_name)
        net = models.make_network(network_cfg, game.spec)
        obs_spec = jax.ShapeDtypeStruct(game.spec.observation_shape, game.observation_dtype)
        frozen = frozen_leaves(net, cfg, {"params": state.params, "batch_stats": state.batch_stats},
                               jnp.zeros((1, *obs_spec.shape), obs_spec.dtype))
        self._train_step = make_train_step(net, cfg, game.symmetries, obs_spec=obs_spec,
                                           material_of=material.balance_of(game_name), frozen=frozen)
        self._state = jax.device_put(state, self._replicated)
        # the run's first network, whose policy and value cfg.start_policy_weight / start_value_weight keep this one near
        self._start = (jax.device_put(start_variables, self._replicated)
                       if cfg.holds_start and start_variables is not None else None)
        # Host copies (the step never changes the RNG): seeds and publication need no device sync.
        self._rng, self._step = np.asarray(state.rng), int(state.step)
        self._replay, self._store = replay, store
        # ObjectRefs of the batches of the next steps, oldest first (the step each is for: _step + i)
        self._batches: collections.deque = collections.deque()

    def _request_batches(self, upto_steps: int) -> None:
        """Keeps sample requests in flight for the next `upto_steps` steps (at most prefetch_batches)."""
        want = min(max(upto_steps, 1), self._cfg.prefetch_batches)
        while len(self._batches) < want:
            seed = sample_seed(self._rng, self._step + len(self._batches))
            self._batches.append(self._replay.sample.remote(self._cfg.batch_size, seed))

    def train(self, num_steps: int) -> TrainResult:
        """Runs `num_steps` (>= 1) training steps; returns the step reached, the last step's metrics
        and the call's time, of which waiting for batches."""
        metrics = {}
        t0, waited = time.perf_counter(), 0.0
        for i in range(num_steps):
            self._request_batches(num_steps - i)
            t_wait = time.perf_counter()
            batch = ray.get(self._batches.popleft())
            waited += time.perf_counter() - t_wait
            batch = jax.device_put(batch, self._split)
            with stops_deferred():  # the step donates the old state: a stop between it and the assignment loses both
                self._state, metrics = self._train_step(self._state, batch, self._start)
                self._step += 1
            if self._step % self._cfg.publish_every == 0:
                self.publish()
        self._request_batches(self._cfg.prefetch_batches)  # the next call's first batches, sampled meanwhile
        metrics = TrainMetrics.of(jax.device_get(metrics))  # waits for the steps dispatched above
        return TrainResult(step=self._step, metrics=metrics, steps=num_steps,
                           seconds=time.perf_counter() - t0, batch_wait_seconds=waited)

    def publish(self) -> None:
        self._store.publish.remote(self._step, self.variables())

    def variables(self) -> dict:
        """{"params", "batch_stats"} as host arrays (what actors and models/network_dir.py take)."""
        return jax.device_get({"params": self._state.params, "batch_stats": self._state.batch_stats})

    def train_state(self) -> TrainState:
        """The whole TrainState on the host (what learner/checkpoint.py saves)."""
        return jax.device_get(self._state)

    def location(self) -> LearnerLocation:
        """Where training runs: the train state's devices (e.g. "cuda:0,cuda:1"), the Ray node and the process."""
        return LearnerLocation(device=describe(self._replicated),
                               node=ray.get_runtime_context().get_node_id(), pid=os.getpid())
