"""The process's environment, shared by the CLIs, tests and benchmarks (not configuration: no
dataclass here, only what a process sets up or reads from its surroundings).

    runtime/jax_cache.py    JAX's persistent compilation cache (~/.cache/zerochess/jax)
    runtime/cpus.py         XLA's CPU devices (one per core) and pinning every thread to cores
    runtime/signals.py      SIGTERM / Ctrl-C as KeyboardInterrupt, checked by loops, deferred by blocks
    runtime/forking.py      starting a process that execs at once without JAX's fork warning
    runtime/engines.py      where Stockfish lies, and starting a UCI engine (python-chess)
    runtime/gpu_memory.py   the GPUs this machine offers and each JAX process's share of their memory
    runtime/data.py         where evaluation data lives ($ZEROCHESS_DATA)

Nothing here imports another package of the project, nor JAX: a process imports this before JAX to
set JAX's environment up. Other rooms use the names below, never a module of runtime.
"""
from runtime.cpus import expose_cpu_cores, pin_threads
from runtime.data import data_dir, data_file
from runtime.engines import find_stockfish, open_uci
from runtime.forking import forks_quietly
from runtime.gpu_memory import (
                                CPU_ONLY_ENV,
                                DEFAULT_DRIVER_GPU_SHARE,
                                GpuMemory,
                                local_gpu_count,
                                out_of_memory_line,
                                process_env,
                                share_driver_gpu,
                                shares_line,
)
from runtime.jax_cache import enable_compilation_cache
from runtime.signals import raise_if_stop_requested, stop_handled, stop_on_signals, stops_deferred

__all__ = ["CPU_ONLY_ENV", "DEFAULT_DRIVER_GPU_SHARE", "GpuMemory", "data_dir", "data_file", "enable_compilation_cache",
           "expose_cpu_cores", "find_stockfish", "forks_quietly", "local_gpu_count", "open_uci", "out_of_memory_line", "pin_threads", "process_env",
           "raise_if_stop_requested", "share_driver_gpu", "shares_line", "stop_handled", "stop_on_signals",
           "stops_deferred"]
