"""The run's Ray: starting or joining it, naming and placing the run's actors, reading their state.

    started = init_ray(cfg, address)          # joins `address` or starts a small local Ray
    names = actor_names(cfg)                  # unique Ray names of the parameter store and the replay
    options = on_this_node()                  # pins an actor to the driver's node (its files land here)
    records = actor_records(handles)          # Ray's GCS record of each actor: state, restarts
    pin_cpus(actors, pin_driver)              # SelfPlayConfig.pin_cpus: one core per actor, the last for the driver
"""
from __future__ import annotations

import contextlib
import logging
import os
import queue
import sys
import threading
import time

import ray

from runtime import forks_quietly, pin_threads, stop_on_signals
from selfplay.config import SelfPlayConfig


def init_ray(cfg: SelfPlayConfig, address: str | None) -> bool:
    """Connects to `address` or starts a small local Ray; returns whether we started it."""
    if ray.is_initialized():
        return False
    with forks_quietly():
        if address:
            ray.init(address=address, log_to_driver=True)
        else:  # "local": a new instance even where `ray start` (or a test's Cluster) left a current cluster
            # Ray's notices at every start: "Started a local Ray instance", and that a local instance
            # uses token authentication (its default)
            with quiet_loggers({"ray._private.worker": logging.WARNING,
                                "ray._private.authentication.authentication_token_setup": logging.ERROR}):
                ray.init(address="local", num_cpus=cfg.ray_num_cpus, include_dashboard=False, log_to_driver=True,
                         object_store_memory=cfg.ray_object_store_mb * 1024 * 1024)
    stop_on_signals()  # after ray.init, whose own handler exits at once
    return True


@contextlib.contextmanager
def quiet_loggers(levels: dict[str, int]):
    """Logger name -> the lowest level it emits while the block runs (never lower than it had)."""
    saved = {name: logging.getLogger(name).level for name in levels}
    for name, level in levels.items():
        logging.getLogger(name).setLevel(max(saved[name], level))
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def actor_names(cfg: SelfPlayConfig) -> dict[str, str]:
    """Ray names of this session's parameter store and replay buffer: unique on a shared cluster
    (run name, driver pid, the time of the call) and looked up by the actors that use them."""
    instance = f"{cfg.name}-{os.getpid()}-{time.time_ns()}"
    return {"store": f"zerochess-store-{instance}", "replay": f"zerochess-replay-{instance}"}


def on_this_node() -> dict:
    """Ray options pinning an actor to the driver's node (its files land in this run directory)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    node = ray.get_runtime_context().get_node_id()
    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_id=node, soft=False)}


def actor_records(handles, timeout: float = 5.0) -> list[dict]:
    """The GCS record of each Ray actor ({"State": "ALIVE" | "RESTARTING" | "DEAD", "NumRestarts": n,
    ...}; {} if unknown): the view ray.get_runtime_context() itself reads, no dashboard needed.
    Asked from a daemon thread: TimeoutError after `timeout` s (after Ctrl-C the GCS may be gone)."""
    from ray._private import state
    answer: queue.Queue = queue.Queue()

    def ask():
        try:
            answer.put([state.actors(actor_id=h._actor_id.hex()) or {} for h in handles])
        except Exception as e:
            answer.put(e)
    threading.Thread(target=ask, daemon=True).start()
    try:
        records = answer.get(timeout=timeout)
    except queue.Empty:
        raise TimeoutError("no answer from Ray's GCS") from None
    if isinstance(records, Exception):
        raise records
    return records


def error_line(error: BaseException) -> str:
    """The last 'SomeError: message' line of an exception's text (Ray's carry the remote traceback), or ""."""
    lines = [line.strip() for line in str(error).splitlines() if "Error: " in line or "Error(" in line]
    return lines[-1][:200] if lines else ""


def cpu_plan(cores: list[int], num_actors: int) -> tuple[list[int], int]:
    """SelfPlayConfig.pin_cpus's placement: (the core of each self-play actor, the driver's core).
    The driver (the learner) keeps the last core to itself; the actors share the others, in turn."""
    return [cores[i % (len(cores) - 1)] for i in range(num_actors)], cores[-1]


def pin_cpus(actors: list, pin_driver: bool) -> None:
    """SelfPlayConfig.pin_cpus: actor i on core i mod (cores - 1), the driver (where `pin_driver`: a
    learner trains there) on the last core; one line where it cannot be done. A restarted actor runs
    unpinned."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cores) < 2:
        print(f"pin_cpus: {len(cores) or 'an unknown number of'} core(s) visible, nothing pinned",
              file=sys.stderr)
        return
    actor_cores, driver_core = cpu_plan(cores, len(actors))
    pinned = ray.get([a.pin_cpus.remote([c]) for a, c in zip(actors, actor_cores)])
    if pin_driver:
        pinned.append(pin_threads([driver_core]))
    if not all(pinned):
        print("pin_cpus: this platform cannot pin threads (Linux only); the run goes on unpinned",
              file=sys.stderr)
