"""The process's environment, shared by the CLIs, tests and benchmarks (not configuration: no
dataclass here, only what a process sets up or reads from its surroundings).

    runtime/jax_cache.py    JAX's persistent compilation cache (~/.cache/zerochess/jax)
    runtime/cpus.py         XLA's CPU devices (one per core) and pinning every thread to cores
    runtime/signals.py      SIGTERM / Ctrl-C as KeyboardInterrupt, checked by loops, deferred by blocks
    runtime/forking.py      starting a process that execs at once without JAX's fork warning
    runtime/gpu_memory.py   the GPUs this machine offers and each JAX process's share of their memory
    runtime/data.py         where evaluation data lives ($ZEROCHESS_DATA)

Nothing here imports another package of the project.
"""
