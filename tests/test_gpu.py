"""The run on GPUs, as far as a CPU machine can check it: each process's memory share
(runtime/gpu_memory.py), the one-line out-of-memory error, the NVML monitor's figures
(selfplay/gpu_monitor.py) (against a stand-in NVML), the train-ratio
accounting, and the one-GPU preset loading and playing a few plies here."""
from __future__ import annotations

import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

from configs.loader import load
from runtime import gpu_memory
from selfplay import gpu_monitor
from selfplay.config import SelfPlayConfig
from selfplay.messages import PlayReport
from selfplay.prepare import memory_shares_line
from selfplay.state import RunState

ROOT = Path(__file__).resolve().parents[1]


def fraction(num_gpus: float, cfg: SelfPlayConfig) -> float:
    return gpu_memory.memory_fraction(num_gpus, cfg.driver_gpu_share)


def process_env(num_gpus: float, cfg: SelfPlayConfig) -> dict[str, str]:
    return gpu_memory.process_env(num_gpus, cfg.gpu_memory, cfg.driver_gpu_share)


def driver_env(cfg: SelfPlayConfig) -> dict[str, str]:
    return gpu_memory.driver_env(cfg.gpu_memory, cfg.driver_gpu_share)


@pytest.fixture
def no_user_memory_vars(monkeypatch):
    for k in ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_PREALLOCATE"):
        monkeypatch.delenv(k, raising=False)


def test_shares_of_one_gpu_add_up_to_less_than_the_gpu(no_user_memory_vars):
    cfg = load(SelfPlayConfig, ROOT / "configs/chess_gpu.yaml")
    actors = cfg.actors.num_actors * fraction(cfg.actors.num_gpus, cfg)
    driver = float(driver_env(cfg)["XLA_CLIENT_MEM_FRACTION"])
    assert driver == pytest.approx(cfg.driver_gpu_share * 0.9)
    assert actors == pytest.approx(cfg.actors.num_actors * cfg.actors.num_gpus * (1 - cfg.driver_gpu_share) * 0.9)
    evaluator = fraction(cfg.evaluation.num_gpus, cfg)
    assert cfg.actors.num_actors * cfg.actors.num_gpus + cfg.evaluation.num_gpus == pytest.approx(1.0)  # Ray's GPU
    assert 0.85 < actors + evaluator + driver <= 0.9  # every process bounded, together under the GPU with headroom
    env = process_env(cfg.actors.num_gpus, cfg)
    assert env == {"XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                   "XLA_CLIENT_MEM_FRACTION": str(fraction(cfg.actors.num_gpus, cfg))}
    assert process_env(0.0, cfg) == {"JAX_PLATFORMS": "cpu"}  # no GPU share: no GPU at all
    # a whole GPU per actor still leaves the driver its share
    assert fraction(1.0, cfg) == pytest.approx((1 - cfg.driver_gpu_share) * 0.9)


def test_grow_and_preallocate_and_the_users_own_settings(no_user_memory_vars, monkeypatch):
    grow = load(SelfPlayConfig, ROOT / "configs/chess_gpu.yaml", ["gpu_memory=grow"])
    assert process_env(0.5, grow) == {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    pre = load(SelfPlayConfig, ROOT / "configs/chess_gpu.yaml", ["gpu_memory=preallocate"])
    assert process_env(0.5, pre) == {} and driver_env(pre) == {}
    share = load(SelfPlayConfig, ROOT / "configs/chess_gpu.yaml")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_MEM_FRACTION", ".5")  # the user's own fraction wins
    assert process_env(0.5, share) == {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")  # ... and their own preallocation
    assert process_env(0.5, share) == {} and driver_env(share) == {}
    assert "each self-play actor 32%" in memory_shares_line(share) and "the evaluator 7%" in memory_shares_line(share)
    with pytest.raises(ValueError, match="driver_gpu_share"):
        load(SelfPlayConfig, ROOT / "configs/chess_gpu.yaml", ["driver_gpu_share=1.0"])


def test_the_cli_sets_its_share_before_pgx_starts_jax_and_not_after(no_user_memory_vars, tmp_path):
    """pgx computes at import, which starts JAX's GPU backend (and its 75% preallocation): selfplay.py
    sets the driver's share from the config and its overrides first."""
    script = f"""
import os, runpy, sys
sys.argv = ["selfplay.py"]
cli = runpy.run_path("selfplay.py", run_name="cli")
assert "pgx" not in sys.modules
code = cli["main"](["--config", "configs/chess_gpu.yaml", "--set", "driver_gpu_share=0.5", "runs_dir={tmp_path}"])
from configs.loader import load
from selfplay.config import SelfPlayConfig
from runtime.gpu_memory import process_env
cfg = load(SelfPlayConfig, "configs/chess_gpu.yaml", ["driver_gpu_share=0.5"])
actor = process_env(0.45, cfg.gpu_memory, cfg.driver_gpu_share)["XLA_CLIENT_MEM_FRACTION"]
print(code, os.environ["XLA_CLIENT_MEM_FRACTION"], os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"], "pgx" in sys.modules, actor)
"""
    import os
    import subprocess
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"} | {"CUDA_VISIBLE_DEVICES": ""}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    # the actors' shares still come from the config (the driver's own setting is not the user's)
    assert out.stdout.split() == ["2", "0.45", "false", "True", "0.2025"], out.stderr[-2000:]
    assert "this machine has 0" in out.stderr  # the chess_gpu preset on this CPU machine: one line, exit 2
    import jax.numpy as jnp
    jnp.zeros(1).block_until_ready()  # in this test process JAX runs already: too late to set anything
    from runtime.gpu_memory import share_driver_gpu
    assert share_driver_gpu(ROOT / "configs/chess_gpu.yaml") == {}


def test_out_of_memory_is_one_line_and_other_errors_are_not_swallowed():
    error = RuntimeError("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while "
                         "trying to allocate 123456 bytes.\n  more traceback\n")
    line = gpu_memory.out_of_memory_line(error, "self-play actor 0", "lower actors.games_per_actor")
    assert line.startswith("self-play actor 0 ran out of GPU memory (") and line.endswith("lower actors.games_per_actor")
    assert "\n" not in line and "RESOURCE_EXHAUSTED" in line
    assert gpu_memory.out_of_memory_line(ValueError("shapes do not match"), "the learner", "x") is None


class FakeNvml(types.ModuleType):
    """A stand-in pynvml: two GPUs whose busy % goes 10, 20, 30, ... per read."""

    def __init__(self):
        super().__init__("pynvml")
        self.reads = 0
        self.NVMLError = RuntimeError

    def nvmlInit(self):
        pass

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA Fake"

    def nvmlDeviceGetMemoryInfo(self, h):
        return types.SimpleNamespace(used=(h + 1) * 2**30, total=80 * 2**30)

    def nvmlDeviceGetUtilizationRates(self, h):
        self.reads += 1
        return types.SimpleNamespace(gpu=10 * self.reads)


def test_monitor_reads_every_gpu_and_averages_over_time(monkeypatch):
    fake = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    started = time.monotonic()
    monitor = gpu_monitor.GpuMonitor(interval=0.01)
    assert monitor.available
    deadline = time.monotonic() + 5
    while fake.reads < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    monitor.close()
    time.sleep(0.05)
    snap = monitor.snapshot()
    assert [s.index for s in snap] == [0, 1] and snap[0].name == "NVIDIA Fake"
    assert snap[1].memory_used_gb == pytest.approx(2.0) and snap[0].memory_total_gb == pytest.approx(80.0)
    with monitor._lock:
        every = [g.busy for _, sample in monitor._samples for g in sample]
    assert monitor.mean_busy() == pytest.approx(np.mean(every))
    assert monitor.mean_busy(since=time.monotonic() + 1) is None  # nothing after `since`
    assert monitor.peak_memory_gb() == pytest.approx(2.0)
    assert gpu_monitor.describe(snap).startswith("GPU0 ") and "2.0/80 GiB" in gpu_monitor.describe(snap)
    figures = monitor.figures(since=started)  # the run's summary: every sample since the loop began
    assert figures.names == ("NVIDIA Fake", "NVIDIA Fake") and figures.busy_mean == pytest.approx(np.mean(every))
    assert figures.memory_peak_gb == pytest.approx(2.0) and figures.memory_total_gb == pytest.approx(80.0)
    assert figures.busy_mean_after_first_minute is None  # no sample a minute after the start


def test_without_nvml_there_are_no_figures_and_no_error(monkeypatch):
    broken = types.ModuleType("pynvml")

    def fail():
        raise OSError("NVML Shared Library Not Found")
    broken.nvmlInit = fail
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    monitor = gpu_monitor.GpuMonitor(interval=0.01)
    assert not monitor.available and monitor.snapshot() == () and monitor.mean_busy() is None
    assert monitor.figures(since=0.0) is None


def test_train_ratio_counts_this_sessions_samples_per_position():
    s = RunState(batch_size=100, step=50, samples_base=5_000, step_base=50, games_total=10, positions_total=1_000,
                 games_at_start=10, next_pgn=0, positions_at_start=1_000)
    assert s.train_ratio() == 0.0  # nothing made yet this session
    s.played(PlayReport(actor=0, games=3, positions=400, game_plies=(100, 100, 200), version=0, seconds=1.0,
                        node="n"))
    s.step = 58  # 8 steps x 100 samples on 400 new positions
    assert s.train_ratio() == pytest.approx(2.0)
    s.learner_steps, s.learner_seconds, s.learner_wait_seconds = 8, 0.5, 0.1
    figures = s.learner_figures()
    assert figures.samples_per_s_training == pytest.approx(1600.0) and figures.train_ratio == pytest.approx(2.0)
    # what the ratio allows next: (2.0 x 1,400 positions - 5,800 samples) // 100 -> -30 steps: none
    assert s.steps_allowed(2.0) == -30


def test_after_the_first_minute_searched_plies_count_games_still_in_flight(monkeypatch):
    """The summary's two speeds after the first minute: finished games' positions, and every position
    the actors searched (a short run with thousands of games in flight finishes few of them)."""
    clock = [1_000.0]
    monkeypatch.setattr("selfplay.state.time.monotonic", lambda: clock[0])
    s = RunState(batch_size=100, step=0, samples_base=0, step_base=0, games_total=0, positions_total=0,
                 games_at_start=0, next_pgn=0, started=clock[0])
    report = dict(actor=0, version=0, seconds=1.0, node="n")
    s.played(PlayReport(games=0, positions=500, game_plies=(), **report))  # inside the first minute
    assert s.warm_plies_searched_per_s() is None and s.warm_positions_per_s() is None
    clock[0] += 60
    s.played(PlayReport(games=1, positions=600, game_plies=(300,), **report))  # the warm mark: after this call
    clock[0] += 10
    s.played(PlayReport(games=1, positions=800, game_plies=(120,), **report))
    s.played(PlayReport(games=0, positions=700, game_plies=(), **report))
    assert s.warm_plies_searched_per_s() == pytest.approx(150.0)  # 1,500 searched in 10 s
    assert s.warm_positions_per_s() == pytest.approx(12.0)  # one game of 120 plies finished in them


def test_the_one_gpu_preset_plays_a_few_plies_on_the_cpu(local_ray):  # noqa: F811
    import jax
    import jax.numpy as jnp
    from local_actor import local_actor

    import games
    cfg = load(SelfPlayConfig, ROOT / "configs/chess_gpu.yaml", ["actors.games_per_actor=2"])
    game = games.make("chess")
    actor, _ = local_actor(cfg, seed=0)
    report = actor.play(3)
    assert report.positions == 6 and all(len(log.actions) == 3 for log in actor.logs)
    assert all(log.policy[0].sum() == pytest.approx(1.0, abs=1e-5) for log in actor.logs)
    from games import packing
    init, step, observe = jax.jit(game.init), jax.jit(game.step), jax.jit(game.observe)  # not op by op
    for log in actor.logs:  # the packed observations the actor logged are pgx's own, replayed from the key
        state = init(jnp.asarray(log.init_key)[None])
        for t, action in enumerate(log.actions):
            logged = packing.unpack(packing.from_bytes([log.obs[t]], game.spec.observation_shape),
                                    game.spec.observation_shape, np.float32)
            np.testing.assert_array_equal(logged, np.asarray(observe(state)))
            state = step(state, jnp.asarray([action]))


def test_a_local_run_asking_for_more_gpus_than_the_machine_has_is_one_line(monkeypatch, tmp_path, capsys):
    from selfplay.errors import RunError
    from selfplay.prepare import check_gpus
    from selfplay.run import run
    cfg = load(SelfPlayConfig, ROOT / "configs/chess_gpu.yaml", [f"runs_dir={tmp_path}"])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(RunError, match=r"asks for 1 GPU\(s\) \(actors.num_gpus=0.9, evaluation.num_gpus=0.1\) and this machine has 0"):
        run(cfg)
    assert not any(tmp_path.iterdir())  # nothing written: the user can fix the command and start again
    capsys.readouterr()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    check_gpus(cfg, local=True)  # two actors at 0.45 and the evaluator at 0.1 fit one GPU
    assert "each self-play actor" in capsys.readouterr().err  # with a GPU: each process's share of its memory
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    check_gpus(load(SelfPlayConfig, ROOT / "configs/chess_gpu.yaml", ["actors.num_gpus=0", "evaluation.num_gpus=0"]), local=True)
    check_gpus(cfg, local=False)  # with --ray-address the cluster has the GPUs, not this machine: no refusal
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    check_gpus(load(SelfPlayConfig, ROOT / "configs/chess_warm_gpu.yaml"), local=True)  # the warm run fits one GPU too
    assert "each self-play actor" in capsys.readouterr().err


def test_a_collapsed_value_head_is_reported_once(capsys):
    """A value head that gives every position one value (the GPU preset's single value channel died
    by step 2,150 on an H200, docs/experiments/2026-11-27-one-gpu-h200.md) is one stderr line, once."""
    from learner.health import ValueHealthMonitor
    from learner.messages import TrainMetrics, TrainResult
    from selfplay.run import _Session
    session = types.SimpleNamespace(value_health=ValueHealthMonitor())
    metrics = lambda std: TrainMetrics(loss=1.0, policy_loss=1.0, value_loss=0.1, policy_entropy=2.0,
                                       learning_rate=0.1, param_norm=10.0, value_std=std,
                                       value_explained=0.0 if std < 1e-6 else 0.2)  # a constant v explains 0
    _Session._check_value_head(session, TrainResult(step=20, metrics=metrics(0.026)))  # the run's start
    _Session._check_value_head(session, TrainResult(step=100, metrics=metrics(0.0)))  # too early to tell
    _Session._check_value_head(session, TrainResult(step=5000, metrics=metrics(0.03)))  # alive
    assert capsys.readouterr().err == ""
    _Session._check_value_head(session, TrainResult(step=2150, metrics=metrics(3e-9)))
    _Session._check_value_head(session, TrainResult(step=2200, metrics=metrics(1e-9)))
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("value head collapsing at step 2150: value std 3e-09 (0% of step 20's)")


def test_an_actor_that_died_says_why_in_one_line():
    from selfplay.cluster import error_line
    text = ("The actor died because of an error raised in its creation task, ray::SelfPlayActor.__init__() "
            "(pid=3764, ip=192.0.2.2)\n  File \"actors/selfplay_actor.py\", line 99, in __init__\n"
            "jax.errors.JaxRuntimeError: INTERNAL: no supported devices found for platform CUDA\n"
            "RuntimeError: Unable to initialize backend 'cuda': INTERNAL: no supported devices found for platform "
            "CUDA (you may need to uninstall the failing plugin package, or set JAX_PLATFORMS=cpu)\n")
    line = error_line(RuntimeError(text))
    assert line.startswith("RuntimeError: Unable to initialize backend 'cuda'") and len(line) <= 200
    assert error_line(RuntimeError("killed by a signal")) == ""
