"""SelfPlayConfig.pin_cpus: the placement plan, and pin_threads reaching every thread of a process
(XLA's pools included), checked in a fresh interpreter so the test process stays unpinned."""
import json
import os
import subprocess
import sys

import pytest

from selfplay.cluster import cpu_plan

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_cpu_plan_keeps_the_last_core_for_the_driver():
    assert cpu_plan([0, 1], 1) == ([0], 1)
    assert cpu_plan([0, 1], 3) == ([0, 0, 0], 1)
    assert cpu_plan([2, 5, 7, 9], 5) == ([2, 5, 7, 2, 5], 9)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs Linux and 2 visible cores")
def test_pin_threads_pins_every_thread_including_ones_started_before():
    target = sorted(os.sched_getaffinity(0))[-1]
    code = f"""
import json, os, threading, time
import jax.numpy as jnp
from runtime.cpus import pin_threads
(jnp.ones((64, 64)) @ jnp.ones((64, 64))).block_until_ready()  # XLA's thread pools exist now
stop = threading.Event(); t = threading.Thread(target=stop.wait); t.start()
ok = pin_threads([{target}])
later = threading.Thread(target=stop.wait); later.start()
masks = {{tid: sorted(os.sched_getaffinity(int(tid))) for tid in os.listdir("/proc/self/task")}}
stop.set()
print(json.dumps({{"ok": ok, "masks": masks}}))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["ok"] is True
    assert len(result["masks"]) >= 3  # main, the two threads, and XLA's
    assert all(mask == [target] for mask in result["masks"].values()), result["masks"]
