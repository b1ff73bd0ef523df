"""GPU memory of the run's JAX processes: each process's bounded share of its GPU, as the
environment variables of its JAX, and the GPUs this machine offers.

    env = process_env(num_gpus=0.25, mode="share", driver_share=0.25)   # a Ray actor's runtime_env
    share_driver_gpu(config_path, overrides)    # this process's share, before pgx starts JAX (CLIs)
    print(shares_line(mode, driver_share, "this process (driver)", [("each self-play actor", 0.45)]))
    line = out_of_memory_line(error, "the learner", "lower learner.batch_size")   # None: not out of memory

JAX preallocates 75% of a GPU in every process, so two processes on one GPU (the run's driver, which
trains, and an actor) exhaust it and cuBLAS then fails to start. With mode `share` each process
takes a bounded share instead (XLA_CLIENT_MEM_FRACTION), grown on demand: the driver `driver_share`
of its GPU, a Ray actor its `num_gpus` fraction of the rest, and a process with no GPU share runs JAX
on the CPU; each share less HEADROOM. `grow` only turns preallocation off (no bound); `preallocate`
is JAX's default, for processes that each own a GPU. SelfPlayConfig.gpu_memory and
driver_gpu_share type their fields with the names here; this module reads plain numbers, no config.
"""
from __future__ import annotations

import os
import sys
from typing import Literal, Optional, Sequence, get_args

GpuMemory = Literal["share", "grow", "preallocate"]  # SelfPlayConfig.gpu_memory
GPU_MEMORY_MODES = get_args(GpuMemory)
DEFAULT_DRIVER_GPU_SHARE = 0.25  # SelfPlayConfig.driver_gpu_share's default
HEADROOM = 0.9  # of a share: CUDA contexts and cuBLAS workspaces live outside XLA's allocator
_FRACTION_VARS = ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION")
_ours: dict[str, str] = {}  # what share_driver_gpu set in this process (not the user's own settings)


def _users(name: str) -> bool:
    return name in os.environ and os.environ[name] != _ours.get(name)


def gpu_memory_env(fraction: float | None, mode: str) -> dict[str, str]:
    """JAX's environment for a process that may allocate `fraction` of its GPU: with mode "share" a
    bound (XLA_CLIENT_MEM_FRACTION) and no preallocation, "grow" no preallocation, "preallocate"
    JAX's default. A fraction or preallocation setting of the user's own environment wins."""
    env = {}
    if mode != "preallocate" and not _users("XLA_PYTHON_CLIENT_PREALLOCATE"):
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    if mode == "share" and fraction is not None and not any(_users(k) for k in _FRACTION_VARS):
        env["XLA_CLIENT_MEM_FRACTION"] = str(round(fraction, 4))
    return env


def memory_fraction(num_gpus: float, driver_share: float) -> float:
    """The fraction of its GPU's memory a Ray actor with `num_gpus` may allocate (mode share): its
    fraction of what the driver's share leaves."""
    return round(min(num_gpus, 1.0) * (1.0 - driver_share) * HEADROOM, 4)


# a Ray actor without a GPU share: importing pgx would otherwise start a GPU backend in it
CPU_ONLY_ENV = {"JAX_PLATFORMS": "cpu"}


def process_env(num_gpus: float, mode: str, driver_share: float) -> dict[str, str]:
    """Environment variables for a Ray actor's JAX (its runtime_env): CPU_ONLY_ENV without a GPU
    share; else its bounded share (share), no preallocation (grow) or JAX's default (preallocate)."""
    if num_gpus <= 0:
        return dict(CPU_ONLY_ENV)
    return gpu_memory_env(memory_fraction(num_gpus, driver_share), mode)


def driver_env(mode: str, driver_share: float) -> dict[str, str]:
    """What the driver (where a local learner trains) gets: `driver_share` of its GPU. Set by
    share_driver_gpu before pgx is imported (pgx starts JAX's backend)."""
    return gpu_memory_env(driver_share * HEADROOM, mode)


def shares_line(mode: str, driver_share: float, driver: str, processes: Sequence[tuple[str, float]]) -> str:
    """One line saying what each process may take of its GPU's memory: `driver` (who this process
    is) and `processes`, (who, Ray num_gpus) for each kind of actor with a GPU share."""
    if mode != "share":
        return f"GPU memory: gpu_memory={mode} (no bound per process)"
    parts = [f"{driver} {100 * driver_share * HEADROOM:.0f}%"]
    parts += [f"{who} {100 * memory_fraction(num_gpus, driver_share):.0f}%" for who, num_gpus in processes if num_gpus]
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


def share_driver_gpu(config_path, overrides=()) -> dict[str, str]:
    """Sets this process's GPU memory share from a self-play config file and its dotted overrides
    (`gpu_memory`, `driver_gpu_share`) before JAX starts its GPU backend, which importing pgx does:
    a CLI calls it first. Returns what it set ({} when JAX already runs or nothing applies)."""
    if "jax" in sys.modules:
        from jax._src import xla_bridge
        if xla_bridge.backends_are_initialized():
            return {}
    mode, share = _memory_settings(config_path, overrides)
    if mode not in GPU_MEMORY_MODES or not isinstance(share, (int, float)) or not 0 < share < 1:
        return {}  # SelfPlayConfig refuses it in one line
    env = driver_env(mode, share)
    os.environ.update(env)
    _ours.update(env)
    return env


def _memory_settings(config_path, overrides) -> tuple[object, object]:
    """(gpu_memory, driver_gpu_share) as the config file and its overrides set them, unchecked: read
    with yaml alone, before the config's own loading (which imports JAX) reports any error."""
    import yaml

    try:
        with open(config_path) as f:
            data = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError):
        data = {}  # the config's own loading reports it
    data = data if isinstance(data, dict) else {}
    for item in overrides:
        key, _, value = item.partition("=")
        if key.strip() in ("gpu_memory", "driver_gpu_share"):
            try:
                data[key.strip()] = yaml.safe_load(value)
            except yaml.YAMLError:
                pass
    return data.get("gpu_memory", "share"), data.get("driver_gpu_share", DEFAULT_DRIVER_GPU_SHARE)
