"""Process-wide JAX setup shared by the CLIs, tests and benchmarks."""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import warnings
from pathlib import Path
from typing import Literal, get_args


def default_cache_dir() -> str:
    """$JAX_COMPILATION_CACHE_DIR, else ~/.cache/zerochess/jax (shared by every checkout)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return os.environ.get("JAX_COMPILATION_CACHE_DIR") or str(Path(base) / "zerochess" / "jax")


def enable_compilation_cache(path: str | None = None) -> str:
    """Turns on JAX's persistent compilation cache (a 6 s search compile drops to ~0.4 s next run).

    Also exports JAX_COMPILATION_CACHE_DIR so that subprocesses and local Ray workers share it.
    """
    import jax

    path = path or default_cache_dir()
    os.environ["JAX_COMPILATION_CACHE_DIR"] = path
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return path


def expose_cpu_cores(count: int = 0) -> bool:
    """Makes XLA's CPU platform show `count` devices (0: one per core) so that a data-parallel step
    splits its batch over the cores. XLA:CPU runs most ops of a small network on one thread each,
    so one device leaves a 2-core machine ~40% idle; two batch halves overlap. Only the CPU platform
    changes (accelerators are untouched). Must run before jax is imported: returns False when it is
    too late (jax already imported) or XLA_FLAGS already names a device count."""
    import sys

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


# a SIGTERM or SIGINT arrived that raise_if_stop_requested has not acted on (a plain bool: a lock, as
# in threading.Event, could deadlock when the handler interrupts the main thread holding it)
_stop_requested = False
_deferring = 0  # depth of open stops_deferred() blocks: the handler records a signal instead of raising


@contextlib.contextmanager
def forks_quietly():
    """Silences JAX's "os.fork() was called ... deadlock" RuntimeWarning around starting processes
    that exec at once (Ray's daemons, a UCI engine): the child runs no JAX, so it cannot deadlock.
    Other warnings stay visible."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
        yield


def stop_on_signals() -> None:
    """SIGTERM (`kill`, a scheduler's preemption, `docker stop`) raises KeyboardInterrupt, so a command
    stops as on Ctrl-C (checkpoint, engines closed, finished work kept). A background job started from
    a script ignores SIGINT, so Ctrl-C alone cannot reach it. Ctrl-C (SIGINT, where Python's own
    handler is installed) goes through the same handler. Main thread only (Python's rule).
    A loop should also call `raise_if_stop_requested()`: a handler that runs inside a finaliser or a gc
    callback (JAX has one) has its KeyboardInterrupt printed and dropped, and the signal would be lost."""
    def interrupt(signum, frame):
        global _stop_requested
        _stop_requested = True
        if not _deferring:
            raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, interrupt)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where SIGINT is ignored
            signal.signal(signal.SIGINT, interrupt)


def raise_if_stop_requested() -> None:
    """KeyboardInterrupt if a SIGTERM or SIGINT arrived since the last call (whether or not its own
    KeyboardInterrupt got through); each signal is acted on once."""
    global _stop_requested
    if _stop_requested:
        _stop_requested = False
        raise KeyboardInterrupt


@contextlib.contextmanager
def stops_deferred():
    """A block that a SIGTERM or Ctrl-C (through `stop_on_signals`' handler) cannot cut in half: the
    signal is recorded and raised as KeyboardInterrupt when the block ends. For a train step that
    donates the old state's buffers and the assignment of the new state: an interrupt between the two
    would leave only deleted arrays to checkpoint. In any other thread (a learner training in a thread)
    it does nothing: no signal interrupts it there, and a stop recorded for the main thread stays its own."""
    global _deferring
    if threading.current_thread() is not threading.main_thread():
        yield  # signals interrupt the main thread alone: another thread's block needs no deferral
        return
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
    if not _deferring:
        raise_if_stop_requested()


# -- GPU memory of the run's processes (selfplay/gpu.py has the per-process rules) -----------------
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
    import sys

    import yaml

    if "jax" in sys.modules:
        from jax._src import xla_bridge
        if xla_bridge.backends_are_initialized():
            return {}
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
    mode, share = data.get("gpu_memory", "share"), data.get("driver_gpu_share", DEFAULT_DRIVER_GPU_SHARE)
    if mode not in GPU_MEMORY_MODES or not isinstance(share, (int, float)) or not 0 < share < 1:
        return {}  # SelfPlayConfig refuses it in one line
    env = gpu_memory_env(share * HEADROOM, mode)
    os.environ.update(env)
    _ours.update(env)
    return env
