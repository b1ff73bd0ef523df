"""The run on GPUs: each process's share of GPU memory, and what the GPUs are doing.

    env = process_env(num_gpus=0.25, cfg)     # env vars of a Ray actor's JAX (its runtime_env)
    runtime.gpu_memory.share_driver_gpu(path, overrides)   # this process's, before pgx starts JAX (CLIs)
    monitor = GpuMonitor()                     # samples busy % and memory of every GPU of this node
    monitor.snapshot()                         # [GpuSample] now; monitor.mean_busy(since=t) over time

Memory: JAX preallocates 75% of a GPU in every process, so two processes on one GPU (the run's
driver, which trains, and an actor) exhaust it and cuBLAS then fails to start. With `gpu_memory:
share` each process takes a bounded share instead (XLA_CLIENT_MEM_FRACTION), grown on demand: the driver `driver_gpu_share`
of its GPU, an actor its Ray `num_gpus` fraction of the rest, and a process with no GPU share runs
JAX on the CPU. `grow` only turns preallocation off (no bound); `preallocate` is JAX's default, for
processes that each own a GPU. `out_of_memory_line` turns an allocation failure into one line.

Busy % is NVML's utilisation (the share of the last sample period in which a kernel ran), read
through nvidia-ml-py (pynvml); no NVML (no NVIDIA driver) means no figures, not an error.
"""
from __future__ import annotations

import dataclasses
import os
import threading
import time
from typing import TYPE_CHECKING, Optional

from runtime.gpu_memory import HEADROOM, gpu_memory_env
from selfplay.messages import GpuFigures

if TYPE_CHECKING:
    from selfplay.config import SelfPlayConfig


def memory_fraction(num_gpus: float, cfg: "SelfPlayConfig") -> float:
    """The fraction of its GPU's memory a Ray actor with `num_gpus` may allocate (gpu_memory: share)."""
    return round(min(num_gpus, 1.0) * (1.0 - cfg.driver_gpu_share) * HEADROOM, 4)


def process_env(num_gpus: float, cfg: "SelfPlayConfig") -> dict[str, str]:
    """Environment variables for a Ray actor's JAX (its runtime_env): CPU only without a GPU share
    (importing pgx would otherwise start a GPU backend in it); else its bounded share (share), no
    preallocation (grow) or JAX's default (preallocate)."""
    if num_gpus <= 0:
        return {"JAX_PLATFORMS": "cpu"}
    return gpu_memory_env(memory_fraction(num_gpus, cfg), cfg.gpu_memory)


def driver_env(cfg: "SelfPlayConfig") -> dict[str, str]:
    """What the driver (selfplay.py's process, where a local learner trains) gets: `driver_gpu_share`.
    Set by runtime.gpu_memory.share_driver_gpu before pgx is imported (pgx starts JAX's backend)."""
    return gpu_memory_env(cfg.driver_gpu_share * HEADROOM, cfg.gpu_memory)


def shares_line(cfg: "SelfPlayConfig") -> str:
    """One line saying what each process may take of its GPU's memory."""
    if cfg.gpu_memory != "share":
        return f"GPU memory: gpu_memory={cfg.gpu_memory} (no bound per process)"
    parts = [f"this process (driver{' and learner' if cfg.learner.placement == 'driver' else ''}) "
             f"{100 * cfg.driver_gpu_share * HEADROOM:.0f}%"]
    if cfg.actors.num_gpus:
        parts.append(f"each self-play actor {100 * memory_fraction(cfg.actors.num_gpus, cfg):.0f}%")
    if cfg.learner.placement == "actor" and cfg.learner.num_gpus:
        parts.append(f"the learner {100 * memory_fraction(cfg.learner.num_gpus, cfg):.0f}%")
    if cfg.evaluation.enabled and cfg.evaluation.num_gpus:
        parts.append(f"the evaluator {100 * memory_fraction(cfg.evaluation.num_gpus, cfg):.0f}%")
    return "GPU memory (of its GPU, at most): " + ", ".join(parts)


def local_gpu_count() -> int:
    """GPUs a local Ray would offer this machine's actors: CUDA_VISIBLE_DEVICES's list where it is
    set, else NVIDIA's device count (0 without an NVIDIA driver)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    try:
        import pynvml
        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:
        return 0


def out_of_memory_line(error: BaseException, who: str, fix: str) -> Optional[str]:
    """One line for a GPU allocation failure inside `who` (an actor, the learner); None for
    any other error."""
    text = str(error)
    if "RESOURCE_EXHAUSTED" not in text and "Out of memory" not in text and "out of memory" not in text:
        return None
    found = next((line.strip() for line in text.splitlines() if "RESOURCE_EXHAUSTED" in line
                  or "ut of memory" in line), "")[:160]
    return f"{who} ran out of GPU memory ({found}): {fix}"


@dataclasses.dataclass(frozen=True)
class GpuSample:
    """One GPU at one moment."""

    index: int  # NVML device index
    name: str  # e.g. "NVIDIA H100 80GB HBM3"
    busy: float  # % of the last sample period in which a kernel ran (NVML utilization.gpu)
    memory_used_gb: float  # GiB in use on the device (every process)
    memory_total_gb: float  # GiB on the device


class GpuMonitor:
    """Samples every GPU of this node from a daemon thread every `interval` s (NVML). Without NVML
    (no NVIDIA driver) `available` is False and every figure is empty."""

    def __init__(self, interval: float = 1.0):
        self.interval = interval
        self._samples: list[tuple[float, tuple[GpuSample, ...]]] = []  # (monotonic time, one per GPU)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._handles = self._open()
        self.available = bool(self._handles)
        if self.available:
            threading.Thread(target=self._loop, name="gpu-monitor", daemon=True).start()

    @staticmethod
    def _open() -> list:
        try:
            import pynvml
            pynvml.nvmlInit()
            return [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except Exception:  # no library, no driver, no device: no figures
            return []

    def _read(self) -> tuple[GpuSample, ...]:
        import pynvml
        out = []
        for i, h in enumerate(self._handles):
            name = pynvml.nvmlDeviceGetName(h)
            memory = pynvml.nvmlDeviceGetMemoryInfo(h)
            out.append(GpuSample(index=i, name=name.decode() if isinstance(name, bytes) else name,
                                 busy=float(pynvml.nvmlDeviceGetUtilizationRates(h).gpu),
                                 memory_used_gb=memory.used / 2**30, memory_total_gb=memory.total / 2**30))
        return tuple(out)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                sample = self._read()
            except Exception:
                continue
            with self._lock:
                self._samples.append((time.monotonic(), sample))

    def snapshot(self) -> tuple[GpuSample, ...]:
        """The latest sample of every GPU (empty before the first or without NVML)."""
        with self._lock:
            return self._samples[-1][1] if self._samples else ()

    def mean_busy(self, since: float = 0.0) -> Optional[float]:
        """Mean busy % over the GPUs and the samples taken at monotonic time >= since (None: none)."""
        with self._lock:
            values = [g.busy for t, sample in self._samples if t >= since for g in sample]
        return sum(values) / len(values) if values else None

    def peak_memory_gb(self) -> Optional[float]:
        """The most GiB in use on one GPU in any sample (None: no samples)."""
        with self._lock:
            values = [g.memory_used_gb for _, sample in self._samples for g in sample]
        return max(values) if values else None

    def close(self) -> None:
        self._stop.set()

    def figures(self, since: float) -> Optional[GpuFigures]:
        """The GPUs from monotonic time `since` (a session's loop) on: busy % also after its first
        minute, when the run is warm; None without NVML. Stops the monitor."""
        if not self.available:
            return None
        self.close()
        last = self.snapshot()
        return GpuFigures(names=tuple(g.name for g in last), busy_mean=self.mean_busy(since),
                          busy_mean_after_first_minute=self.mean_busy(since + 60),
                          memory_peak_gb=self.peak_memory_gb(),
                          memory_total_gb=max((g.memory_total_gb for g in last), default=0.0))


def describe(samples: tuple[GpuSample, ...]) -> str:
    """'GPU 87% 12.3/79.6 GiB' per device, for the progress line ("" without GPUs)."""
    return "  ".join(f"GPU{'' if len(samples) == 1 else s.index} {s.busy:.0f}% "
                     f"{s.memory_used_gb:.1f}/{s.memory_total_gb:.0f} GiB" for s in samples)
