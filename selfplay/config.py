"""SelfPlayConfig: one run of `selfplay.py`, composed of each package's config (YAML in configs/).

    from selfplay.config import SelfPlayConfig
    cfg = configs.loader.load(SelfPlayConfig, "configs/chess_cpu.yaml", ["learner.batch_size=128"])
"""
from __future__ import annotations

import dataclasses

from actors.config import ActorConfig
from learner.config import LearnerConfig
from models import NetworkConfig
from replay.config import ReplayConfig
from search.config import SearchConfig


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """Everything a self-play run needs; the resolved copy is saved as runs/<name>/config.yaml."""

    name: str = "chess_cpu"  # run name: files go to <runs_dir>/<name>/
    game: str = "chess"  # games.make name: chess, tic_tac_toe, connect_four, go_9x9, shogi
    seed: int = 0  # seeds network init, actors' games and the learner's sampling
    runs_dir: str = "runs"  # parent directory of run directories
    network: NetworkConfig = NetworkConfig()  # the network (family + its hyper-parameters)
    search: SearchConfig = SearchConfig()  # the batched search actors play with
    actors: ActorConfig = ActorConfig()  # self-play actors
    replay: ReplayConfig = ReplayConfig()  # replay window and chunk files
    learner: LearnerConfig = LearnerConfig()  # optimiser, loss, checkpoints, train ratio
    max_minutes: float = 0.0  # stop (checkpointed, resumable) after this wall time; 0: no limit
    ray_num_cpus: int = 2  # CPUs of the local Ray instance (ignored with --ray-address)
    ray_object_store_mb: int = 256  # object store of the local Ray instance, MiB
    log_every_seconds: float = 10.0  # TensorBoard scalars and non-TTY progress lines
    sample_game_every: int = 20  # append every n-th finished game to games.pgn (chess)
    freeze_corpus_on_exit: bool = False  # write runs/<name>/corpus/ (immutable) when the run stops

    def __post_init__(self):
        if not self.name or "/" in self.name or self.name.startswith("."):
            raise ValueError(f"name must be a plain directory name, got {self.name!r}")
        if self.max_minutes < 0 or self.ray_num_cpus < 1 or self.ray_object_store_mb < 64:
            raise ValueError("max_minutes >= 0, ray_num_cpus >= 1 and ray_object_store_mb >= 64 required")
