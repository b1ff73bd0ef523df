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


TWO_DEVICE_CHECKS = {}  # name -> script, registered by the test modules that need two CPU devices


@pytest.fixture(scope="session")
def two_device_checks(tmp_path_factory) -> dict:
    """Every registered two-device check, run once in ONE fresh interpreter (two CPU devices need
    XLA_FLAGS before JAX starts): name -> "ok" or the check's traceback. The tests that use it carry
    `pytest.mark.xdist_group("two_devices")`, so with `--dist loadgroup` they share one run."""
    import json
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    for module in ("test_learner_parallel", "test_distill_parallel"):  # register both, whoever asks first
        __import__(module)
    runner = (
        "import json, sys, traceback\n"
        "checks = json.loads(sys.argv[1])\n"
        "for name, (script, arg) in checks.items():\n"
        "    sys.argv = ['-c', arg]\n"
        "    try:\n"
        "        exec(compile(script, name, 'exec'), {'__name__': '__check__'})\n"
        "        print(json.dumps([name, 'ok']), flush=True)\n"
        "    except BaseException:\n"
        "        print(json.dumps([name, traceback.format_exc()[-3000:]]), flush=True)\n")
    checks = {name: (script, str(tmp_path_factory.mktemp(name))) for name, script in TWO_DEVICE_CHECKS.items()}
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "PYTHONPATH": str(root)}
    result = subprocess.run([sys.executable, "-c", runner, json.dumps(checks)], cwd=root, env=env,
                            capture_output=True, text=True, timeout=600)
    found = dict(json.loads(line) for line in result.stdout.splitlines() if line.startswith('["'))
    return {name: found.get(name, f"no result (exit {result.returncode}): {result.stderr[-3000:]}")
            for name in checks}
