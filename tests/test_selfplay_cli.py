"""selfplay.py's presets and command line: every preset loads, and a bad value, an unknown key or a
missing run is one line and exit 2."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from configs.loader import ConfigError, load
from selfplay.config import SelfPlayConfig

ROOT = Path(__file__).resolve().parents[1]


def test_config_presets_load_and_bad_values_name_the_key():
    for name in ("chess_cpu", "chess_az", "tic_tac_toe", "connect_four", "go_9x9"):
        cfg = load(SelfPlayConfig, ROOT / f"configs/{name}.yaml")
        assert cfg.name == name
    az = load(SelfPlayConfig, ROOT / "configs/chess_az.yaml")
    assert (az.network.resnet.num_blocks, az.network.resnet.filters) == (19, 256)
    assert az.search.num_simulations == 800 and az.learner.batch_size == 4096
    assert az.learner.lr_values == (0.02, 0.002, 0.0002, 0.00002)  # the value head saturates at 0.2 and 0.05
    with pytest.raises(ConfigError, match="learner.batch_sise"):
        load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", ["learner.batch_sise=3"])
    with pytest.raises(ConfigError, match="actors.games_per_actor"):
        load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", ["actors.games_per_actor=many"])
    with pytest.raises(ConfigError, match="lr_values"):
        load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", ["learner.lr_boundaries=[5]"])
    with pytest.raises(ConfigError, match="learner.placement"):
        load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", ["learner.placement=gpu"])
    with pytest.raises(ConfigError, match="placement=actor"):  # a GPU learner is a Ray actor
        load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", ["learner.num_gpus=1"])
    assert (az.learner.placement, az.learner.num_gpus) == ("actor", 1)


def _selfplay_cli():
    """selfplay.py's main, loaded from the file (the package selfplay/ owns the name)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("selfplay_cli", ROOT / "selfplay.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    return cli.main


@pytest.mark.parametrize("config,override,needle", [
    ("chess_cpu", "learner.nope=1", "learner.nope"),
    ("chess_cpu", "search.num_simulations=abc", "search.num_simulations"),
    ("connect_four", "network.family=chessformer", "chessformer family plays chess only")])  # once a traceback after the run directory
def test_cli_config_error_is_one_line_exit_2(config, override, needle, tmp_path, capsys):
    """In this process; the first case also through the real entry point."""
    args = ["--config", str(ROOT / f"configs/{config}.yaml"), "--set", override, "--set", f"runs_dir={tmp_path}"]
    assert _selfplay_cli()(args) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], err
    assert not any(tmp_path.iterdir())  # nothing left behind
    if override == "learner.nope=1":
        r = subprocess.run([sys.executable, str(ROOT / "selfplay.py"), *args], capture_output=True, text=True,
                           cwd=ROOT, timeout=60)
        assert r.returncode == 2 and r.stderr == err, r.stderr


@pytest.mark.parametrize("config, engine, needle", [
    ("connect_four.yaml", "minimax", "known: alphabeta:depth=N"),  # a board player of another game
    ("chess_cpu.yaml", "stockfish:skil=0", "evaluation.engines"),  # a misspelt agent option
])
def test_a_bad_ladder_is_one_line_before_the_run_directory(config, engine, needle, tmp_path, capsys):
    args = ["--config", str(ROOT / "configs" / config), "--set", f"evaluation.engines=[{engine}]",
            "--set", f"runs_dir={tmp_path}"]
    assert _selfplay_cli()(args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("selfplay.py: evaluation.engines:") and needle in lines[0], lines
    assert not any(tmp_path.iterdir())  # nothing left behind


def test_cli_resume_without_a_run_is_one_line_exit_2(tmp_path, capsys):
    assert _selfplay_cli()(["--config", str(ROOT / "configs/tic_tac_toe.yaml"), "--resume", "--set",
                            f"runs_dir={tmp_path}"]) == 2
    assert "nothing to resume" in capsys.readouterr().err.strip().splitlines()[-1]


def test_augment_for_a_game_without_symmetry_is_a_one_line_config_error():
    with pytest.raises(ConfigError, match="chess has no board symmetry"):
        load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", ["learner.augment=true"])

