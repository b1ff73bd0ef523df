"""Test-wide setup: JAX on CPU with the persistent compilation cache (recompiles cost seconds)."""
import os

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# Every compile goes to the persistent cache (runtime/jax_cache.py), the many small ones of eager
# (un-jitted) ops too: on a warm cache they load instead of compiling.
from runtime.jax_cache import enable_compilation_cache  # noqa: E402

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
    XLA_FLAGS before JAX starts): name -> "ok" or the check's traceback. The tests that use it share
    one xdist worker (SHARED_SCOPES), so the run happens once."""
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
    env = {**os.environ, "PYTHONPATH": str(root),
           "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2".strip()}
    result = subprocess.run([sys.executable, "-c", runner, json.dumps(checks)], cwd=root, env=env,
                            capture_output=True, text=True, timeout=600)
    found = dict(json.loads(line) for line in result.stdout.splitlines() if line.startswith('["'))
    return {name: found.get(name, f"no result (exit {result.returncode}): {result.stderr[-3000:]}")
            for name in checks}


# Tests that must share one xdist worker: a module whose expensive module fixture would otherwise be
# built on both workers, and the tests of one session fixture. Every other test is its own unit, as
# with --dist load. (pytest-xdist's own xdist_group marks are lost under pytest 9: it renames node
# ids through an attribute pytest no longer reads.)
SHARED_SCOPES = {
    "tests/test_chess_rules.py": "chess_rules",  # 200 games stepped against python-chess
    "tests/test_warm_start.py": "warm_start",  # a distilled network trained once
    "tests/test_arena_student_agents.py": "student_agents",  # six tiny students saved once
    "tests/test_arena_network_agents.py": "arena_network_agents",
    "tests/test_learner_parallel.py::test_two_device_learner_trains_as_one_device_learner": "two_devices",
    "tests/test_distill_parallel.py::test_two_device_step_equals_one_device_step": "two_devices",
}


def shared_scope(nodeid: str) -> str:
    """The scheduling unit of a test: its SHARED_SCOPES entry (by test, then by module), else itself."""
    module = nodeid.split("::", 1)[0]
    return SHARED_SCOPES.get(nodeid.split("[", 1)[0], SHARED_SCOPES.get(module, nodeid))


# The longest scheduling units start first: started last, one of them keeps a worker busy long after
# the other has finished. Their order is learnt from the last run's durations (each test's setup, call
# and teardown seconds, kept in pytest's cache under DURATIONS_KEY); a unit's time is the sum of its
# tests'. Units with no duration yet (a fresh clone) that are known to be slow start first, in this order.
DURATIONS_KEY = "zerochess/test_durations"
KNOWN_SLOW = (
    "tests/test_selfplay_stops.py::test_kill_nine_ctrl_c_and_sigterm_each_resume_exactly",
    "tests/test_selfplay_e2e.py::test_tic_tac_toe_learns_on_two_node_cluster",
    "tests/test_evaluation.py::test_tic_tac_toe_run_rates_its_networks_and_resumes_the_curve",
    "chess_rules",
    "two_devices",
    "tests/test_damage.py::test_damaged_chunk_and_checkpoint_on_resume_are_set_aside_and_the_run_continues",
    "arena_network_agents",
    "tests/test_damage.py::test_kill_dash_nine_of_a_selfplay_actor_is_restarted_and_counted",
)


def _unit(item_or_nodeid) -> str:
    nodeid = getattr(item_or_nodeid, "nodeid", item_or_nodeid)
    return shared_scope(nodeid.split("[", 1)[0])


def _unit_seconds(items, durations: dict) -> dict:
    """unit -> seconds: the sum of its tests' last durations; a KNOWN_SLOW unit none of whose tests has
    a duration yet (a fresh clone, a new test) comes before every measured one, in KNOWN_SLOW's order."""
    seconds: dict = {}
    for item in items:
        if item.nodeid in durations:
            unit = _unit(item)
            seconds[unit] = seconds.get(unit, 0.0) + float(durations[item.nodeid])
    top = max(seconds.values(), default=0.0)
    for rank, unit in enumerate(KNOWN_SLOW):
        if unit not in seconds:
            seconds[unit] = top + len(KNOWN_SLOW) - rank
    return seconds


def pytest_collection_modifyitems(config, items):
    """Longest unit first (the last run's durations), the rest in file order; a unit's tests stay
    together. Every xdist worker collects the same order (the cache is written only at the end)."""
    cache = getattr(config, "cache", None)
    durations = (cache.get(DURATIONS_KEY, {}) if cache is not None else {}) or {}
    seconds = _unit_seconds(items, durations if isinstance(durations, dict) else {})
    first = {}
    for i, item in enumerate(items):
        first.setdefault(_unit(item), i)
    items.sort(key=lambda item: (-seconds.get(_unit(item), 0.0), first[_unit(item)]))


_ran: dict = {}  # nodeid -> seconds of this run (setup + call + teardown), in the process that reports


def pytest_runtest_logreport(report):
    """Every phase's duration; under xdist the controller receives the workers' reports too."""
    _ran[report.nodeid] = _ran.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session):
    """The durations of the tests that ran, merged into the cache's (tests not run keep theirs).
    Written by the controller (or the single process), not by xdist's workers."""
    config = session.config
    cache = getattr(config, "cache", None)
    if cache is None or hasattr(config, "workerinput") or not _ran:
        return
    known = cache.get(DURATIONS_KEY, {}) or {}
    known = known if isinstance(known, dict) else {}
    cache.set(DURATIONS_KEY, {**known, **{k: round(v, 2) for k, v in _ran.items()}})


@pytest.hookimpl(optionalhook=True)  # xdist's hook: absent with -p no:xdist
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class SharedScopeScheduling(LoadScopeScheduling):
        """Units in collection order (longest first), not xdist's default of the most tests first."""

        def _split_scope(self, nodeid: str) -> str:
            return shared_scope(nodeid)

        def schedule(self) -> None:
            self.config.option.loadscopereorder = False
            super().schedule()

    return SharedScopeScheduling(config, log)
