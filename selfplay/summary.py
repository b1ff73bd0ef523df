"""A finished run's summary, for a person and for programs.

    write_summary(run_dir, summary)          # runs/<name>/summary.json: the RunSummary as JSON
    print("\\n".join(summary_lines(summary, cfg, run_dir)))   # selfplay.py's last lines

The lines say what the run made, its last evaluation, where its network directory is, and the
commands that play it (chess: match.py, uci.py) and resume it; `selfplay.py --json` prints the JSON
instead.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shlex
import sys
from pathlib import Path

from selfplay.config import SelfPlayConfig
from selfplay.evaluation import learning_text
from selfplay.messages import RunSummary
from selfplay.progress import elo_text, probe_text

SUMMARY_FILE = "summary.json"
ROOT = Path(__file__).resolve().parents[1]  # where selfplay.py, match.py and uci.py live


def summary_json(summary: RunSummary) -> str:
    """The whole summary (every field of RunSummary) as one JSON line."""
    return json.dumps(dataclasses.asdict(summary))


def write_summary(run_dir: Path, summary: RunSummary) -> Path:
    """runs/<name>/summary.json, replaced whole (a reader never sees half a file); the path."""
    path = Path(run_dir) / SUMMARY_FILE
    tmp = path.with_name(f".{SUMMARY_FILE}.tmp")
    tmp.write_text(summary_json(summary) + "\n")
    os.replace(tmp, path)
    return path


def _shown(path: str | Path) -> str:
    """A path as a person types it here: relative to the working directory when under it (links kept:
    a venv's python is a link to the system's)."""
    full, here = os.path.abspath(path), os.getcwd()
    return os.path.relpath(full, here) if full.startswith(here + os.sep) else str(path)


def _command(script: str, *args: str) -> str:
    return " ".join([shlex.quote(_shown(sys.executable)), shlex.quote(_shown(ROOT / script)), *args])


def summary_lines(summary: RunSummary, cfg: SelfPlayConfig, run_dir: Path) -> list[str]:
    """A few lines for the terminal: what the run made, its last evaluation, its network directory
    and the commands that play and resume it."""
    s, run_dir = summary, Path(run_dir)
    resumed = s.start_step > 0 or s.reloaded_games > 0
    steps = f"step {s.step:,}" + (f" ({s.step - s.start_step:,} this session)" if resumed else "")
    games = f"{s.games_total:,} games" + (f" ({s.games_this_session:,} this session)" if resumed else "")
    out = [f"run {cfg.name} stopped ({s.stop_reason}) after {s.seconds / 60:.1f} minutes: {steps}, "
           f"{s.positions_total:,} positions in {games}, {s.positions_per_s:,.0f} positions/s"]
    if s.games_quarantined or s.actor_restarts:
        out.append(f"  damage: {s.games_quarantined} game(s) set aside in replay/quarantine/, "
                   f"{s.actor_restarts} actor restart(s)")
    if s.evaluation is not None:
        out.append(f"last evaluation: Elo {elo_text(s.evaluation)} (random = 0, 95% intervals)")
        if probe_text(s.evaluation):
            out.append(f"probe: {probe_text(s.evaluation)}")
        if s.learning is not None:
            out.append(learning_text(s.learning))
    elif cfg.evaluation.enabled:
        out.append("last evaluation: none finished")
    if s.sparring_score is not None:
        a = cfg.actors
        out.append(f"sparring: the network scored {s.sparring_score:.1%} in {s.sparring_games:,} games against "
                   f"Stockfish skill {a.sparring_skill} at depth {a.sparring_depth} this session")
    network = run_dir / "network"
    net = _shown(network)
    if network.is_dir():
        out.append(f"network: {net}")
        if cfg.game == "chess":
            spec = f'"mcts:net={net}"'
            out.append(f"  play it:  {_command('match.py', spec, 'random', '--games', '20')}")
            out.append(f"  as UCI:   {_command('uci.py', '--agent', spec)}")
    else:
        out.append(f"network: none saved yet ({net})")
    resume = [shlex.quote(_shown(run_dir / "config.yaml")), "--resume"]
    if s.stop_reason == "max_steps":  # the run's config.yaml stops it again at once: more steps
        resume += ["--set", f"learner.max_steps={2 * max(s.step, 1)}"]
    elif s.stop_reason == "max_minutes":  # ... or more minutes (both count every session)
        resume += ["--set", f"max_minutes={2 * cfg.max_minutes:g}"]
    out.append(f"resume it: {_command('selfplay.py', '--config', *resume)}")
    out.append(f"summary: {_shown(run_dir / SUMMARY_FILE)} (every figure; selfplay.py --json prints it)")
    return out
