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

    Every compile is kept, the small ones too: pgx's chess rule core is ~100 tiny compiles at import,
    3.3 s a process without them in the cache, 1.0 s with (a driver, each actor, the learner, the
    evaluator). Exports JAX_COMPILATION_CACHE_DIR and JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS
    (unless set) so that subprocesses and local Ray workers, which import pgx before any of our code
    runs, keep them too.
    """
    import jax

    path = path or default_cache_dir()
    os.environ["JAX_COMPILATION_CACHE_DIR"] = path
    jax.config.update("jax_compilation_cache_dir", path)
    min_seconds = os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_seconds))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return path
