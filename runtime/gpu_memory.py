"""GPU memory of the run's JAX processes: the environment variables that bound each one's share
(selfplay/gpu.py has the per-process rules; SelfPlayConfig.gpu_memory and driver_gpu_share type
their fields with the names here)."""
from __future__ import annotations

import os
import sys
from typing import Literal, get_args

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
    env = gpu_memory_env(share * HEADROOM, mode)
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
