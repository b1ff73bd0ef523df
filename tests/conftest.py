"""Test-wide setup: JAX on CPU with the persistent compilation cache (recompiles cost seconds)."""
import os

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")

from configs.runtime import enable_compilation_cache  # noqa: E402

enable_compilation_cache()


@pytest.fixture(scope="module")
def local_ray():
    """A one-CPU Ray instance of this test module's own (address="local": never a cluster that
    `ray start` or another test recorded on the machine)."""
    import ray
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
