"""Test-wide setup: JAX on CPU with the persistent compilation cache (recompiles cost seconds)."""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

from configs.runtime import enable_compilation_cache  # noqa: E402

enable_compilation_cache()
