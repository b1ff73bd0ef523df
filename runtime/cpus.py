"""CPU cores: XLA's CPU platform showing one device per core, and pinning a process's threads."""
from __future__ import annotations

import os
import sys


def expose_cpu_cores(count: int = 0) -> bool:
    """Makes XLA's CPU platform show `count` devices (0: one per core) so that a data-parallel step
    splits its batch over the cores. XLA:CPU runs most ops of a small network on one thread each,
    so one device leaves a 2-core machine ~40% idle; two batch halves overlap. Only the CPU platform
    changes (accelerators are untouched). Must run before jax is imported: returns False when it is
    too late (jax already imported) or XLA_FLAGS already names a device count."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "jax" in sys.modules or "xla_force_host_platform_device_count" in flags:
        return False
    count = count or os.cpu_count() or 1
    os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={count}".strip()
    return True


def pin_threads(cores: list[int]) -> bool:
    """Pins every thread of this process (XLA's pools included, which a plain sched_setaffinity of the
    calling thread would miss) to `cores`; threads started later inherit it. Linux only: returns False
    where the process cannot be pinned."""
    if not hasattr(os, "sched_setaffinity") or not os.path.isdir("/proc/self/task"):
        return False
    try:
        for tid in os.listdir("/proc/self/task"):
            try:
                os.sched_setaffinity(int(tid), cores)
            except ProcessLookupError:  # a thread that ended meanwhile
                pass
    except OSError:
        return False
    return True
