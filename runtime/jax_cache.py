"""JAX's persistent compilation cache: a search compile of ~6 s drops to ~0.4 s on the next run."""
from __future__ import annotations

import os
from pathlib import Path


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
    # compiles under 0.5 s are not worth a file, unless the environment says otherwise (the tests: 0)
    jax.config.update("jax_persistent_cache_min_compile_time_secs",
                      float(os.environ.get("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", 0.5)))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return path
