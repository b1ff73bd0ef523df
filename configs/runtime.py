"""Process-wide JAX setup shared by the CLIs and benchmarks."""
from __future__ import annotations

import os

from configs.paths import REPO_ROOT


def enable_compilation_cache(path: str | None = None) -> str:
    """Turns on JAX's persistent compilation cache (a 6 s search compile drops to ~0.4 s next run)."""
    import jax

    path = path or os.environ.get("JAX_COMPILATION_CACHE_DIR") or str(REPO_ROOT / ".jax_cache")
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return path
