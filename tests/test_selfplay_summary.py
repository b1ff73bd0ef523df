"""A run's end (selfplay/summary.py): runs/<name>/summary.json holds every field of the RunSummary,
and the lines for a person name what was made, the last Elo with its interval, the network directory
and commands that play and resume it, which parse as the CLIs' own arguments."""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import shlex
import sys
from pathlib import Path

import pytest

from configs.loader import load
from selfplay.config import SelfPlayConfig
from selfplay.messages import EvalReport, RunSummary
from selfplay.summary import summary_json, summary_lines, write_summary

ROOT = Path(__file__).resolve().parents[1]


def _summary(**changes) -> RunSummary:
    report = EvalReport(step=300, hours=0.1, positions=5000, games=600, loss=1.2, elo=212.4, elo_lower=101.0,
                        elo_upper=330.2, score_vs_random=0.875, mates_search=None, mates_policy=None, seconds=12.0,
                        scores=(("random", 0.875),))
    base = RunSummary(stop_reason="max_minutes", step=340, start_step=40, samples_trained=340 * 128,
                      games_total=812, positions_total=51234, games_this_session=700, reloaded_games=112,
                      metrics=None, learner=None, seconds=366.0, games_quarantined=0, actor_restarts=0,
                      actor_nodes=("n1",), evaluation=report, positions_per_s=140.2)
    return dataclasses.replace(base, **changes)


def _cli(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_cli", ROOT / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_summary_json_file_holds_every_field(tmp_path):
    summary = _summary()
    path = write_summary(tmp_path, summary)
    assert path == tmp_path / "summary.json"
    data = json.loads(path.read_text())
    assert data == json.loads(summary_json(summary)) == json.loads(json.dumps(dataclasses.asdict(summary)))
    assert data["evaluation"]["elo_lower"] == 101.0 and data["positions_total"] == 51234
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temporary file left


def test_lines_for_a_chess_run_name_the_network_and_the_commands(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", ["name=mine"])
    run_dir = Path("runs/mine")
    (run_dir / "network").mkdir(parents=True)
    lines = summary_lines(_summary(), cfg, run_dir)
    text = "\n".join(lines)
    assert 3 <= len(lines) <= 8 and max(map(len, lines)) < 200, text
    assert "step 340 (300 this session)" in lines[0] and "812 games (700 this session)" in lines[0]
    assert "51,234 positions" in lines[0] and "6.1 minutes" in lines[0]
    assert "+212 [+101, +330]" in text and "88% vs random" in text
    assert "network: runs/mine/network" in text
    commands = {line.split(":", 1)[0].strip(): shlex.split(line.split(":", 1)[1]) for line in lines[2:]}
    assert commands["play it"][0] == str(Path(sys.executable))  # not resolved: a venv's python is a link
    match_args = commands["play it"][2:]
    assert commands["play it"][1].endswith("match.py") and match_args[0] == "mcts:net=runs/mine/network"
    parsed = _cli("match").build_parser().parse_args(match_args)
    assert parsed.games == 20
    assert commands["as UCI"][-2:] == ["--agent", "mcts:net=runs/mine/network"]
    resume = _cli("selfplay").parse_args(commands["resume it"][2:])
    # stopped at max_minutes (6, every session counted): more minutes, as a stop at max_steps gets more steps
    assert resume.resume and resume.config == "runs/mine/config.yaml" and resume.overrides == ["max_minutes=12"]
    assert "runs/mine/summary.json" in lines[-1]


def test_the_lines_say_whether_the_probe_saw_learning(tmp_path):
    from selfplay.messages import Learning
    cfg = load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", ["name=mine"])
    lines = summary_lines(_summary(learning=Learning(0, 300, ("value",))), cfg, tmp_path)
    assert "learning: from step 0 to 300 the value's error left the first interval (probe, 95%)" in lines
    lines = summary_lines(_summary(learning=Learning(0, 300, (), "not learning at step 300: ...")), cfg, tmp_path)
    assert any(line.startswith("not learning yet: from step 0 to 300") for line in lines)
    assert json.loads(summary_json(_summary(learning=Learning(0, 300, ("policy",)))))["learning"]["rose"] == ["policy"]


def test_lines_for_a_run_stopped_at_max_steps_resume_with_more_steps(tmp_path):
    cfg = load(SelfPlayConfig, ROOT / "configs/tic_tac_toe.yaml", [f"runs_dir={tmp_path}", "name=t"])
    lines = summary_lines(_summary(stop_reason="max_steps", evaluation=None), cfg, tmp_path / "t")
    text = "\n".join(lines)
    assert "match.py" not in text and "uci.py" not in text  # they play chess
    new = summary_lines(_summary(start_step=0, reloaded_games=0), cfg, tmp_path / "t")[0]
    assert "this session" not in new and "step 340, 51,234 positions in 812 games, 140 positions/s" in new
    assert "network: none saved yet" in text
    resume = _cli("selfplay").parse_args(shlex.split(next(x for x in lines if x.startswith("resume it:"))
                                                     .split(":", 1)[1])[2:])
    assert resume.resume and resume.overrides == ["learner.max_steps=680"]
    assert resume.config == str(tmp_path / "t" / "config.yaml")


def test_a_run_config_yaml_loads_as_the_config_it_resumes_with(tmp_path):
    """The resume line passes runs/<name>/config.yaml as --config: it loads to the run's own config."""
    import yaml

    from configs.loader import to_dict
    cfg = load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", [f"runs_dir={tmp_path}", "name=r", "max_minutes=3"])
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False))
    assert load(SelfPlayConfig, tmp_path / "config.yaml", []) == cfg


def test_a_runs_limits_count_every_session_and_a_finished_run_says_how_to_extend_it():
    """max_minutes and learner.max_steps both count the run's earlier sessions (a resumed run finishes
    what an interruption cut short); a resume past either stops before Ray starts, in one line."""
    from selfplay.errors import RunError
    from selfplay.run import _refuse_finished
    from selfplay.state import RunState
    state = RunState(batch_size=256, step=340, samples_base=0, step_base=340, games_total=0, positions_total=0,
                     games_at_start=0, next_pgn=10, seconds_base=5.9 * 60)
    assert state.limit_reached(0, 6) is None and state.limit_reached(0, 5.5) == "max_minutes"
    assert state.limit_reached(340, 0) == "max_steps" and state.limit_reached(341, 12) is None
    cfg = load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", ["name=r", "max_minutes=5.5"])
    with pytest.raises(RunError, match=r"already ran its max_minutes=5.5 \(5.9 minutes.*--set max_minutes=11"):
        _refuse_finished(cfg, 340, 5.9)
    _refuse_finished(load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", ["name=r", "max_minutes=12"]), 340, 5.9)
    six = load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", ["name=r"])  # the preset's 6 minutes
    line = next(x for x in summary_lines(_summary(), six, Path("runs/r")) if x.startswith("resume it:"))
    assert _cli("selfplay").parse_args(shlex.split(line.split(":", 1)[1])[2:]).overrides == ["max_minutes=12"]


def test_a_sparring_run_says_how_the_network_scored_against_stockfish(tmp_path):
    cfg = load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", ["actors.sparring_fraction=0.5"])
    lines = summary_lines(_summary(sparring_games=120, sparring_score=0.275), cfg, tmp_path)
    assert ("sparring: the network scored 27.5% in 120 games against Stockfish skill 0 at depth 1 this session"
            in lines)
    assert not any(line.startswith("sparring") for line in summary_lines(_summary(), cfg, tmp_path))


def test_progress_shows_the_latest_sparring_games_score(tmp_path):
    from selfplay.messages import PlayReport
    from selfplay.progress import PARTNER_WINDOW, Progress
    cfg = load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", ["actors.sparring_fraction=0.5",
                                                                  "actors.sparring_skill=3"])
    progress = Progress(tmp_path, cfg, show=False)
    report = lambda scores: PlayReport(actor=0, games=len(scores), positions=10, game_plies=(5,) * len(scores),  # noqa: E731
                                       version=0, seconds=1.0, node="n", partner_scores=tuple(scores))
    assert progress.partner_text() == "" and progress.partner_score() is None
    progress.games_finished(report([0.0] * PARTNER_WINDOW))
    progress.games_finished(report([1.0, 0.5] * 50))  # the window keeps the latest 200: 100 zeros, 50 + 25 points
    assert progress.partner_text() == f"vs Stockfish s3 d1 38% of {PARTNER_WINDOW}"
    assert progress.partner_score() == 75 / 300
    progress.close()
