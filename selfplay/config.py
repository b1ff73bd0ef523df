"""SelfPlayConfig: one run of `selfplay.py`, composed of each package's config (YAML in configs/).

    from selfplay.config import SelfPlayConfig
    cfg = configs.loader.load(SelfPlayConfig, "configs/chess_cpu.yaml", ["learner.batch_size=128"])
"""
from __future__ import annotations

import dataclasses
from typing import Optional, get_args

from actors import ActorConfig
from configs import check_at_least
from games import symmetry
from learner import LearnerConfig
from models import NetworkConfig, check_game, upgrade_network_dict
from replay import ReplayConfig
from runtime import DEFAULT_DRIVER_GPU_SHARE, GpuMemory
from search import SearchConfig


@dataclasses.dataclass(frozen=True)
class EvaluationConfig:
    """The in-run evaluator (selfplay/evaluation/): Elo of each new network against fixed anchors."""

    enabled: bool = False  # run the evaluator beside the actors
    every_steps: int = 500  # evaluate the newest published network every this many learner steps
    every_minutes: float = 0.0  # ... or every this many minutes (0: by steps only)
    at_start: bool = True  # evaluate the first network of a fresh run (the untrained baseline)
    at_end: bool = True  # evaluate the final network when the run stops (it waits for that)
    openings: int = 10  # start positions per opponent, each played with both colours
    book: str = "8moves_v3.pgn"  # chess opening book (openings/ of the shared data, or a path)
    random_plies: int = 2  # other games: uniform random plies from the start position, for variety
    max_plies: int = 400  # a longer gauntlet game is scored a draw
    previous_networks: int = 2  # earlier evaluated networks of the run each new one plays
    # the fixed ladder: chess arena agent specs (stockfish:..., uci:...), tic_tac_toe "minimax",
    # connect_four "alphabeta:depth=N"; None: the game's default (games/ladders.py)
    engines: Optional[tuple[str, ...]] = None
    # chess: mateIn1 and as many mateIn2 puzzles solved by the search (its mate checks solve nearly all: a
    # check that they work, not a learning figure, so a few; each costs the evaluation a search per move)
    mate_puzzles: int = 50
    # chess: mateIn1 puzzles solved by the raw policy, one forward pass each (at most the 1,235 of the data): the
    # mate the search's root checks find and self-play's targets teach first; an untrained policy mates in a
    # few %, so a rise within minutes needs ~1,000 to clear its interval (mateIn2's first move is learnt later)
    policy_mate_puzzles: int = 1000
    # chess: positions of the probe set (arena/batched/probe.py; at most 500) on which the raw policy and the search
    # are compared with Stockfish's best move and the value with its win probability; 0: none
    probe: int = 500
    # chess: learner steps after the run's first evaluation by which some probe figure must have left its
    # first interval (selfplay/evaluation/learning.py), else one "not learning" warning; 0: never warn
    learning_after_steps: int = 2000
    num_cpus: float = 1.0  # Ray resources of the evaluator actor (a cluster gives it its own)
    num_gpus: float = 0.0  # GPUs of the evaluator actor (its searches are a few positions at a time: the CPU serves)

    def __post_init__(self):
        check_at_least(self, 0, "random_plies", "num_cpus", "num_gpus", prefix="evaluation.")
        if self.every_steps < 1 or self.every_minutes < 0:
            raise ValueError("evaluation.every_steps >= 1 and evaluation.every_minutes >= 0 required")
        if self.openings < 1 or self.max_plies < 0 or self.previous_networks < 0:
            raise ValueError("evaluation.openings >= 1; max_plies, previous_networks >= 0")
        check_at_least(self, 0, "mate_puzzles", "policy_mate_puzzles", "probe", "learning_after_steps",
                       prefix="evaluation.")


@dataclasses.dataclass(frozen=True)
class InitConfig:
    """Where a fresh run's network starts (a resumed run continues from its checkpoint instead)."""

    # a network directory (`distill.py warm-start` writes one; a run's network/ is one): its weights,
    # a fresh optimiser, the run's step 0; "" = random initialisation from `seed`
    network: str = ""


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """Everything a self-play run needs; the resolved copy is saved as runs/<name>/config.yaml."""

    name: str = "chess_cpu"  # run name: files go to <runs_dir>/<name>/
    game: str = "chess"  # games.make name: chess, tic_tac_toe, connect_four, go_9x9, shogi
    seed: int = 0  # seeds network init, actors' games and the learner's sampling
    runs_dir: str = "runs"  # parent directory of run directories
    network: NetworkConfig = NetworkConfig()  # the network (family + its hyper-parameters)
    init: InitConfig = InitConfig()  # warm start: the weights a fresh run begins from
    search: SearchConfig = SearchConfig()  # the batched search actors play with
    actors: ActorConfig = ActorConfig()  # self-play actors
    replay: ReplayConfig = ReplayConfig()  # replay window and chunk files
    learner: LearnerConfig = LearnerConfig()  # optimiser, loss, checkpoints, train ratio
    evaluation: EvaluationConfig = EvaluationConfig()  # in-run Elo against fixed anchors
    # stop (checkpointed, resumable) once the run's wall time, every session counted, reaches this (a resumed
    # run finishes what an interruption cut short; raise it to extend a finished run); 0: no limit
    max_minutes: float = 0.0
    ray_num_cpus: int = 2  # CPUs of the local Ray instance (ignored with --ray-address)
    ray_object_store_mb: int = 256  # object store of the local Ray instance, MiB
    # Local Ray only: self-play actor i on core i mod (cores - 1), the driver (and its learner) on the
    # last core, so the XLA thread pools of two processes stop trading places on a small machine
    # (connect four on 2 cores: docs/selfplay.md#throughput). Ignored with --ray-address.
    pin_cpus: bool = False
    # GPU memory of the run's JAX processes (runtime/gpu_memory.py): "share" bounds each: the driver (and a
    # learner trained there) `driver_gpu_share` of its GPU, a self-play actor its actors.num_gpus fraction
    # of the rest, a process without a GPU share on the CPU; "grow": no preallocation, no bound;
    # "preallocate": JAX's default 75% per process (only where each process owns its GPU)
    gpu_memory: GpuMemory = "share"
    driver_gpu_share: float = DEFAULT_DRIVER_GPU_SHARE  # the driver's share of its GPU's memory (gpu_memory=share)
    log_every_seconds: float = 10.0  # TensorBoard scalars and non-TTY progress lines
    sample_game_every: int = 20  # append every n-th finished game to games.pgn (chess)
    freeze_corpus_on_exit: bool = False  # write runs/<name>/corpus/ (immutable) when the run stops

    @classmethod
    def upgrade_dict(cls, data: dict) -> dict:
        """An older run's keys as the current fields name them (configs/loader.py): the ResNet's feature
        planes become network.input_features, which needs the game (models/network.py)."""
        if "network" in data:
            data["network"] = upgrade_network_dict(data["network"], data.get("game", cls.game))
        return data

    def __post_init__(self):
        if not self.name or "/" in self.name or self.name.startswith("."):
            raise ValueError(f"name must be a plain directory name, got {self.name!r}")
        check_at_least(self, 0, "seed")
        check_at_least(self, 1, "sample_game_every")
        if self.log_every_seconds <= 0:
            raise ValueError(f"log_every_seconds must be > 0, got {self.log_every_seconds:g}")
        if self.max_minutes < 0 or self.ray_num_cpus < 1 or self.ray_object_store_mb < 64:
            raise ValueError("max_minutes >= 0, ray_num_cpus >= 1 and ray_object_store_mb >= 64 required")
        if self.learner.augment and len(symmetry.of(self.game)) < 2:
            raise ValueError(f"learner.augment: {self.game} has no board symmetry (connect_four, tic_tac_toe and "
                             f"go_* have); set learner.augment=false")
        check_game(self.network, self.game)
        if self.gpu_memory not in get_args(GpuMemory):
            raise ValueError(f"gpu_memory must be one of {get_args(GpuMemory)}, got {self.gpu_memory!r}")
        if not 0.0 < self.driver_gpu_share < 1.0:
            raise ValueError(f"driver_gpu_share must be in (0, 1), got {self.driver_gpu_share:g}")
        for name in LearnerConfig.START_TERMS:
            if getattr(self.learner, name) and not self.init.network:
                raise ValueError(f"learner.{name} keeps the network near init.network's: set init.network, "
                                 "or leave it at 0")
        if self.learner.material_value and self.game != "chess":
            raise ValueError(f"learner.material_value reads chess material; {self.game} has none: "
                             f"set learner.material_value=0")
        if self.actors.sparring_fraction and self.game != "chess":
            raise ValueError(f"actors.sparring_fraction has Stockfish play chess; {self.game} is not chess: "
                             f"set actors.sparring_fraction=0")
        if self.actors.adjudicate_plies and self.game != "chess":
            raise ValueError(f"actors.adjudicate_plies scores a game by chess material; {self.game} has none: "
                             f"set actors.adjudicate_plies=0")
        if self.replay.anchor_fraction and (self.game != "chess" or self.network.history):
            raise ValueError("replay.anchor_records are FEN boards of chess, without history: they need game chess "
                             "and network.history=false (a warm-started network's setting)")
