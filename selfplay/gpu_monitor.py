"""What the GPUs of this node are doing while a run plays: busy % and memory, sampled from a thread.

    monitor = GpuMonitor()                     # samples busy % and memory of every GPU of this node
    monitor.snapshot()                         # [GpuSample] now; monitor.mean_busy(since=t) over time
    figures = monitor.figures(since=started)   # GpuFigures of a session's loop (stops the monitor)
    describe(monitor.snapshot())               # 'GPU 87% 12.3/79.6 GiB', for the progress line

Busy % is NVML's utilisation (the share of the last sample period in which a kernel ran), read
through nvidia-ml-py (pynvml); no NVML (no NVIDIA driver) means no figures, not an error. Each
process's share of GPU memory is runtime/gpu_memory.py's.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from typing import Optional

from selfplay.messages import GpuFigures


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
