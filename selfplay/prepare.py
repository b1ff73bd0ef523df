"""Before the loop: what a run checks, reads and writes before its Ray actors play.

    check_local_gpus(cfg)                    # a local run asking for GPUs this machine lacks: one line
    print(memory_shares_line(cfg))           # what each process may take of its GPU's memory
    lines = read_inputs(cfg, game)           # actors.opening_book as pgx actions, the ladder checked (before any file is written)
    run_dir = prepare_run_dir(cfg, resume)   # runs/<name>/, config.yaml; on --resume the same game and network
    state = initial_state(cfg, game)         # the network with random weights, or init.network's (warm start)
    stats = reload_replay(replay, run_dir)   # the replay actor reads its chunk files

Errors a user can cause or meet here are one RunError line with the fix (`start_error_line`).
"""
from __future__ import annotations

import errno
import sys
from pathlib import Path

import jax
import ray
import yaml

from arena import ladder_opponents
from configs import ConfigError, to_dict, upgrade
from learner import TrainState, init_train_state
from models import make_network, network_dir
from replay import AnchorSet, RecordError, SchemaError
from runtime import local_gpu_count, shares_line
from selfplay.config import SelfPlayConfig
from selfplay.errors import RunError
from selfplay.messages import ReplayStats

MUST_MATCH_ON_RESUME = ("game", "network")  # what the checkpoints and the replay were made with


def run_dir_of(cfg: SelfPlayConfig) -> Path:
    return Path(cfg.runs_dir) / cfg.name


def prepare_run_dir(cfg: SelfPlayConfig, resume: bool) -> Path:
    """The run directory with the current config.yaml: a new run's (refused where a run exists), or on
    --resume an existing run's (refused where it holds none or another game or network)."""
    run_dir = run_dir_of(cfg)
    started = (run_dir / "config.yaml").exists()
    if started and not resume:
        raise RunError(f"{run_dir} already holds a run: pass --resume to continue it or choose another name")
    if resume and not started:
        raise RunError(f"nothing to resume in {run_dir} (no config.yaml)")
    if resume:
        check_resumable(run_dir, cfg)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False))
    return run_dir


def check_resumable(run_dir: Path, cfg: SelfPlayConfig) -> None:
    """On --resume: the run's config.yaml parses and names the same game and network as `cfg` (read as
    the current fields name them: a retired option set in the run is one line)."""
    path = run_dir / "config.yaml"
    try:
        saved = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise RunError(f"{path} is not valid YAML ({' '.join(str(e).split())[:120]}); "
                       "repair it or start a new run with another name") from None
    try:
        saved = upgrade(SelfPlayConfig, saved if isinstance(saved, dict) else {})
    except ConfigError as e:
        raise RunError(f"{path}: {e}") from None
    now = yaml.safe_load(yaml.safe_dump(to_dict(cfg), sort_keys=False))  # tuples as the file has them
    for key in MUST_MATCH_ON_RESUME:
        found = _first_difference((saved or {}).get(key), now[key], key)
        if found:
            raise RunError(f"config mismatch on --resume: {found} ({path}); the run's checkpoints and games "
                           "were made with it: drop that --set, or start a new run with another name")


def _first_difference(saved, now, key: str) -> str | None:
    """The first key where a saved config differs from the current one ("network.resnet.filters: 32 -> 64");
    keys only one side has are not differences (a newer code's field with its default)."""
    if isinstance(saved, dict) and isinstance(now, dict):
        for k in saved:
            if k in now:
                found = _first_difference(saved[k], now[k], f"{key}.{k}")
                if found:
                    return found
        return None
    return None if saved == now else f"{key} is {saved!r} in the run, {now!r} now"


def start_error_line(e: BaseException) -> str | None:
    """One line for an error a user can cause or meet on start (a damaged or missing file, a full
    disk), with the fix; None for anything else (a bug: let it raise)."""
    if isinstance(e, SchemaError):  # written by newer code: not damage
        return f"{e}; continue this run with the code that wrote it"
    if isinstance(e, RecordError):
        return str(e) if "replay.strict" in str(e) else f"{e}; move that file out of the replay directory"
    if isinstance(e, OSError) and e.errno == errno.ENOSPC:
        return f"no space left on the device ({e.filename or e}): free some, or set runs_dir to another disk"
    if isinstance(e, OSError):
        return f"{e}: check that path (permissions, a file where a directory belongs) or set runs_dir elsewhere"
    if isinstance(e, ValueError):  # replay/pruned.json unreadable
        return f"{e}; restore it, or move the replay directory away (its games are then not reloaded)"
    return None


def check_local_gpus(cfg: SelfPlayConfig) -> None:
    """A local run whose actors ask for more GPUs than this machine has would wait forever: one line."""
    wanted = {"actors.num_gpus": cfg.actors.num_gpus * cfg.actors.num_actors,
              "learner.num_gpus": cfg.learner.num_gpus if cfg.learner.placement == "actor" else 0.0,
              "evaluation.num_gpus": cfg.evaluation.num_gpus if cfg.evaluation.enabled else 0.0}
    have = local_gpu_count()
    if sum(wanted.values()) > have + 1e-9:
        asked = ", ".join(f"{k}={v:g}" for k, v in wanted.items() if v)
        raise RunError(f"the run asks for {sum(wanted.values()):g} GPU(s) ({asked}) and this machine has {have:g}: "
                       "run it on a GPU machine, or set actors.num_gpus=0 (and those others to 0) to play on the CPU")


def memory_shares_line(cfg: SelfPlayConfig) -> str:
    """One line saying what each of the run's processes may take of its GPU's memory
    (runtime/gpu_memory.py's shares, gpu_memory=share)."""
    driver = f"this process (driver{' and learner' if cfg.learner.placement == 'driver' else ''})"
    return shares_line(cfg.gpu_memory, cfg.driver_gpu_share, driver, [
        ("each self-play actor", cfg.actors.num_gpus),
        ("the learner", cfg.learner.num_gpus if cfg.learner.placement == "actor" else 0.0),
        ("the evaluator", cfg.evaluation.num_gpus if cfg.evaluation.enabled else 0.0)])


def read_inputs(cfg: SelfPlayConfig, game) -> tuple:
    """What the run reads and checks before its directory exists, so that a bad one leaves nothing
    behind: the opening book's lines (returned) and the evaluator's ladder (`evaluation.engines`, else
    `game`'s)."""
    lines = opening_lines(cfg)
    if cfg.evaluation.enabled:
        try:
            ladder_opponents(cfg.game, game.spec.ladder, cfg.evaluation.engines)
        except ValueError as e:
            raise RunError(f"evaluation.engines: {e}") from None
    return lines


def opening_lines(cfg: SelfPlayConfig) -> tuple:
    """actors.opening_book's lines as pgx action arrays (selfplay/openings.py); () without a book."""
    if not cfg.actors.opening_book:
        return ()
    from selfplay.openings import book_lines
    try:
        return book_lines(cfg.actors.opening_book, cfg.game)
    except (OSError, ValueError) as e:
        raise RunError(str(e)) from None


def initial_state(cfg: SelfPlayConfig, game, warm_start: bool = True) -> TrainState:
    """The learner state of a fresh run: its network (`network`) with random weights from `seed`, or
    `init.network`'s weights (warm start) with a fresh optimiser at step 0. These are the first
    parameters published. `warm_start=False` (a resume, whose checkpoint replaces them) skips reading
    init.network; one that cannot start this network is one line."""
    variables = None
    if cfg.init.network and warm_start:
        try:
            variables = network_dir.variables_for(cfg.init.network, cfg.game, cfg.network)
        except (FileNotFoundError, ValueError) as e:
            raise RunError(f"init.network {cfg.init.network}: {e}") from None
    net = make_network(cfg.network, game.spec)
    obs0 = game.observe(game.init(jax.random.split(jax.random.PRNGKey(cfg.seed), 1)))
    return init_train_state(net, cfg.learner, obs0, jax.random.PRNGKey(cfg.seed), variables)


def reload_replay(replay, run_dir: Path) -> ReplayStats:
    """Has the replay actor read its directory: a start error is a RunError line; damaged games set
    aside are one line on stderr."""
    try:
        stats = ray.get(replay.reload.remote())
    except ray.exceptions.RayTaskError as e:
        line = start_error_line(e.cause)
        if line is None:
            raise
        raise RunError(f"replay: {line}") from None
    if stats.games_quarantined:
        print(f"replay: {stats.games_quarantined} damaged game(s) set aside: their chunk files moved to "
              f"{run_dir / 'replay' / 'quarantine'}/, the intact games kept (--set replay.strict=true stops instead)",
              file=sys.stderr)
    return stats


def anchor_set(cfg: SelfPlayConfig, game) -> AnchorSet:
    """replay.anchor_records' first replay.anchor_boards training boards (distill's records: the best
    move one-hot, the oracle's value), as the replay buffer mixes them in; a bad directory is one line."""
    from distill import DataConfig, RecordStore, load_boards
    r = cfg.replay
    try:
        store = RecordStore(r.anchor_records)
        rows = store.split("train", DataConfig().test_fraction)[:r.anchor_boards]  # distill's held-out games stay out
        boards = load_boards(store, rows, game.spec.max_legal_actions, temperature=0.0)
    except (FileNotFoundError, ValueError) as e:
        raise RunError(f"replay.anchor_records {r.anchor_records}: {e}") from None
    print(f"anchor boards: {len(boards):,} from {r.anchor_records}, {r.anchor_fraction:.0%} of every batch",
          flush=True)
    return AnchorSet.of(boards.observation, boards.legal_actions, boards.policy, boards.z)
