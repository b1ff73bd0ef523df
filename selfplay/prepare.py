"""Before the loop: what a run checks, reads and writes before its Ray actors play.

    envs = check_gpus(cfg, local)                  # GPUs a local run asks for and lacks: one line; each process's memory share
    inputs = read_inputs(cfg, game, resume)        # opening book, ladder, anchor boards, the network, init.network: read and checked before any file is written
    start = open_run(cfg, game, inputs, resume)    # runs/<name>/ with config.yaml, the learner's first state, the open checkpointer
    stats = reload_replay(replay, start.run_dir)   # the replay actor reads its chunk files

Errors a user can cause or meet here are one RunError line with the fix (`start_error_line`).
"""
from __future__ import annotations

import errno
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import jax
import ray
import yaml

from arena import ladder_opponents
from configs import ConfigError, to_dict, upgrade
from learner import Checkpointer, TrainState, ValueHealthMonitor, init_train_state
from models import make_network, network_dir
from replay import AnchorSet, RecordError, SchemaError
from runtime import find_stockfish, local_gpu_count, process_env, shares_line
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


@dataclass(frozen=True)
class ProcessEnvs:
    """The environment (Ray's runtime_env["env_vars"]) of each kind of the run's Ray processes: its
    JAX's share of its GPU's memory (runtime.process_env), CPU only without a GPU share. Made with the
    shares line that reports them (memory_shares_line), so the two cannot disagree."""
    actor: dict[str, str]  # each self-play actor (actors.num_gpus)
    learner: dict[str, str]  # the learner actor (learner.num_gpus; placement "actor")
    evaluator: dict[str, str]  # the evaluator (evaluation.num_gpus)


def check_gpus(cfg: SelfPlayConfig, local: bool) -> ProcessEnvs:
    """A local run whose actors ask for more GPUs than this machine has would wait forever: one line.
    On a machine with a GPU, prints what each process started from here may take of its memory.
    Returns each process's environment."""
    have = local_gpu_count()
    if local:
        wanted = {"actors.num_gpus": cfg.actors.num_gpus * cfg.actors.num_actors,
                  "learner.num_gpus": cfg.learner.num_gpus if cfg.learner.placement == "actor" else 0.0,
                  "evaluation.num_gpus": cfg.evaluation.num_gpus if cfg.evaluation.enabled else 0.0}
        if sum(wanted.values()) > have + 1e-9:
            asked = ", ".join(f"{k}={v:g}" for k, v in wanted.items() if v)
            raise RunError(f"the run asks for {sum(wanted.values()):g} GPU(s) ({asked}) and this machine has {have:g}: "
                           "run it on a GPU machine, or set actors.num_gpus=0 (and those others to 0) to play on the CPU")
    if have:
        print(memory_shares_line(cfg), file=sys.stderr, flush=True)
    mode, share = cfg.gpu_memory, cfg.driver_gpu_share
    return ProcessEnvs(actor=process_env(cfg.actors.num_gpus, mode, share),
                       learner=process_env(cfg.learner.num_gpus, mode, share),
                       evaluator=process_env(cfg.evaluation.num_gpus, mode, share))


def memory_shares_line(cfg: SelfPlayConfig) -> str:
    """One line saying what each of the run's processes may take of its GPU's memory
    (runtime/gpu_memory.py's shares, gpu_memory=share)."""
    driver = f"this process (driver{' and learner' if cfg.learner.placement == 'driver' else ''})"
    return shares_line(cfg.gpu_memory, cfg.driver_gpu_share, driver, [
        ("each self-play actor", cfg.actors.num_gpus),
        ("the learner", cfg.learner.num_gpus if cfg.learner.placement == "actor" else 0.0),
        ("the evaluator", cfg.evaluation.num_gpus if cfg.evaluation.enabled else 0.0)])


@dataclass(frozen=True)
class Inputs:
    """What a run reads from outside its directory and the network it trains, made before the directory
    exists."""
    opening_lines: tuple  # actors.opening_book's lines as pgx action arrays; () without a book
    anchors: Optional[AnchorSet]  # replay.anchor_records' boards; None when replay.anchor_fraction is 0
    network: Any  # the flax module `network` builds for `game` (models.make_network)
    # init.network's weights: a fresh run's first network, and what learner.start_*_weight keep the
    # network near (read on --resume for that alone); None: random weights from `seed`
    init_variables: Optional[dict] = None


def read_inputs(cfg: SelfPlayConfig, game, resume: bool = False) -> Inputs:
    """What the run reads and checks before its directory exists, so that a bad one leaves nothing
    behind: the opening book, Stockfish for sparring games, the evaluator's ladder (`evaluation.engines`, else `game`'s), the
    anchor boards (`replay.anchor_records`: its first `anchor_boards` training boards, distill's
    held-out games left out), the network `network` builds for `game`, and `init.network`'s weights (a warm start; on --resume only for
    learner.start_*_weight, the checkpoint replacing them; one that cannot start this network is
    one line)."""
    lines = opening_lines(cfg)
    if cfg.actors.sparring_fraction:
        try:
            find_stockfish()
        except FileNotFoundError as e:
            raise RunError(f"actors.sparring_fraction: {e}, or set actors.sparring_fraction=0") from None
    if cfg.evaluation.enabled:
        try:
            ladder_opponents(cfg.game, game.spec.ladder, cfg.evaluation.engines)
        except ValueError as e:
            raise RunError(f"evaluation.engines: {e}") from None
    anchors, r = None, cfg.replay
    if r.anchor_fraction:
        from distill import read_anchor_set  # on use: it loads the chess tables, which other games never need
        try:
            anchors = read_anchor_set(r.anchor_records, r.anchor_boards, game.spec.max_legal_actions, r.anchor_temperature)
        except (FileNotFoundError, ValueError) as e:
            raise RunError(f"replay.anchor_records {r.anchor_records}: {e}") from None
        print(f"anchor boards: {len(anchors):,} from {r.anchor_records}, {r.anchor_fraction:.0%} of every batch",
              flush=True)
    try:
        net = make_network(cfg.network, game.spec)
    except ValueError as e:
        raise RunError(f"network: {e}") from None
    variables = None
    if cfg.init.network and (not resume or cfg.learner.holds_start):
        key = jax.random.PRNGKey(cfg.seed)  # the grown network's fresh variables, made only if needed
        fresh = lambda: net.init(key, game.observe(game.init(jax.random.split(key, 1))), train=False)  # noqa: E731
        try:
            variables = network_dir.variables_for(cfg.init.network, cfg.game, cfg.network, fresh)
        except (FileNotFoundError, ValueError) as e:
            raise RunError(f"init.network {cfg.init.network}: {e}") from None
    return Inputs(lines, anchors, net, variables)


def opening_lines(cfg: SelfPlayConfig) -> tuple:
    """actors.opening_book's lines as pgx action arrays (selfplay/openings.py); () without a book."""
    if not cfg.actors.opening_book:
        return ()
    from selfplay.openings import book_lines
    try:
        return book_lines(cfg.actors.opening_book, cfg.game)
    except (OSError, ValueError) as e:
        raise RunError(str(e)) from None


@dataclass(frozen=True)
class Start:
    """Where a session of the run starts: what the newest checkpoint holds on --resume, else a fresh run's."""
    run_dir: Path  # runs/<name>/ with the current config.yaml
    state: TrainState  # the learner's: the checkpoint's, or the first network (step 0)
    checkpointer: Checkpointer  # open on runs/<name>/checkpoints/: the caller closes it (`with start.checkpointer:`)
    samples_trained: int = 0  # over the run's earlier sessions
    seconds_total: float = 0.0  # the run's clock: its earlier sessions' wall time
    value_health: ValueHealthMonitor = field(default_factory=ValueHealthMonitor)  # the run's first value figures


def open_run(cfg: SelfPlayConfig, game, inputs: Inputs, resume: bool) -> Start:
    """The run directory (prepare_run_dir) and the learner's first state: `inputs.network` with random weights
    from `seed`, or `inputs.init_variables` (a warm start: init.network's weights, a fresh optimiser at
    step 0), or on --resume the newest readable checkpoint (params, optimiser, step, RNG, counters).
    These are the first parameters published."""
    run_dir = prepare_run_dir(cfg, resume)
    obs0 = game.observe(game.init(jax.random.split(jax.random.PRNGKey(cfg.seed), 1)))
    first = None if resume else inputs.init_variables  # on --resume the checkpoint's replace them
    state = init_train_state(inputs.network, cfg.learner, obs0, jax.random.PRNGKey(cfg.seed), first)
    checkpointer = Checkpointer(run_dir / "checkpoints", cfg.learner.keep_checkpoints)
    try:
        restored = checkpointer.restore_latest(state) if resume else None
    except BaseException:
        checkpointer.close()
        raise
    if restored is None:
        return Start(run_dir, state, checkpointer)
    state, meta = restored
    return Start(run_dir, state, checkpointer, int(meta["samples_trained"]), float(meta.get("seconds_total", 0.0)),
                 ValueHealthMonitor.from_meta(meta))


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
