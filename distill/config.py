"""Distillation configs: frozen dataclasses, loaded from configs/distill_*.yaml with --set overrides.

Choice fields are `Literal`s, checked when a config is built (from YAML or in code)."""
from __future__ import annotations

import dataclasses
import os
from typing import ClassVar, Literal

from configs import Retired, check_at_least, check_choices, check_unit_interval

# av: (board, move) -> value bins, one pair per example (the paper); av_all: board -> every legal
# move's win probability from one pass; sv: board -> value bins; bc: board -> the move to play
Target = Literal["av", "av_all", "sv", "bc"]
Sampler = Literal["unique", "weighted"]


@dataclasses.dataclass(frozen=True)
class AnnotateConfig:
    # PGNs, relative to the data dir (games/lichess_100_games_with_evals.pgn is the probe set's:
    # arena/batched/probe.py, never trained on)
    pgn: tuple[str, ...] = ("games/lichess_user_export_3970.pgn", "games/tcec_superfinals_s10-s13_400.pgn")
    # more boards: EPD files (opening books: each position) and Lichess puzzle CSVs (each board along
    # the solution; puzzles of evaluate.puzzles are left out so the student is not tested on them)
    positions: tuple[str, ...] = ()
    out_dir: str = "runs/distill/annotations"  # record shards go here (git-ignored runs/)
    sampler: Sampler = "unique"  # "unique" (each FEN once) or "weighted" (also keep occurrence counts)
    max_boards: int = 20_000  # boards to annotate (games in seeded random order, whole games)
    seed: int = 0  # game order
    workers: int = 0  # Stockfish processes, one thread each (0: one per core, os.cpu_count())
    nodes_per_move: int = 500  # search nodes per legal move (0: use time_per_move)
    time_per_move: float = 0.0  # seconds per legal move (the paper: 0.05) when nodes_per_move is 0
    engine: str = ""  # Stockfish binary ("": $STOCKFISH_BIN, PATH, /usr/games/stockfish; see arena.agents.engine)
    shard_size: int = 10_000  # records per msgpack shard

    def __post_init__(self):
        check_choices(self)
        check_at_least(self, 0, "seed", "nodes_per_move", "time_per_move", prefix="annotate.")
        check_at_least(self, 1, "shard_size", prefix="annotate.")
        if self.nodes_per_move == 0 and self.time_per_move <= 0:
            raise ValueError("annotate: nodes_per_move 0 needs time_per_move > 0 (seconds per legal move)")
        if self.workers < 0 or self.max_boards < 0:
            raise ValueError("annotate.workers >= 0 (0: one per core) and annotate.max_boards >= 0 required")

    @property
    def num_workers(self) -> int:
        """Engine processes to start: `workers`, or one per core when it is 0."""
        return self.workers or os.cpu_count() or 1


@dataclasses.dataclass(frozen=True)
class DataConfig:
    records: str = "runs/distill/annotations"  # record directory (annotations or a frozen corpus)
    target: Target = "av"  # "av" / "av_all" (action values), "sv" (state values) or "bc" (behavioural cloning)
    test_fraction: float = 0.05  # share of GAMES held out for evaluation
    sampler: Sampler = "unique"  # "unique": uniform over boards; "weighted": by occurrence count
    # BC, and AV-all's best-move term, toward the record's soft policy (self-play visits) instead of one move
    bc_soft: bool = False
    sv_from: Literal["value", "outcome"] = "value"  # SV target: oracle/root value or game result
    # removed fields that saved configs still name (configs/loader.py); an older corpus's fast plies
    # (playout cap randomization) are always left out (distill/records.py)
    RETIRED: ClassVar = {"fast_plies": Retired("drop")}

    def __post_init__(self):
        check_choices(self)
        check_unit_interval(self, "test_fraction", prefix="data.")


@dataclasses.dataclass(frozen=True)
class StudentConfig:
    family: Literal["searchless", "chessformer"] = "searchless"  # 77 FEN tokens or 64 square tokens
    preset: str = ""  # a models/presets.py name (e.g. searchless_9m); "" = the fields below
    num_bins: int = 128  # K value bins (AV/SV)
    embedding_dim: int = 64  # model width
    num_layers: int = 2  # transformer blocks
    num_heads: int = 4  # attention heads
    widening_factor: int = 4  # MLP hidden = widening_factor * embed_dim
    # matmuls and activations of the student in this dtype (float32 parameters, losses and outputs):
    # bfloat16 pays on accelerators' tensor cores
    compute_dtype: Literal["float32", "bfloat16"] = "float32"

    def __post_init__(self):
        check_choices(self)
        check_at_least(self, 1, "num_bins", "embedding_dim", "num_layers", "num_heads", "widening_factor",
                       prefix="student.")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    out_dir: str = "runs/distill/av"  # training state (state/), student network directory (student/), tb/, train.json
    loss: Literal["ce", "hl_gauss", "l2"] = "ce"  # one-hot bins (the paper), smoothed bins, or L2 (ablation)
    best_move_weight: float = 0.0  # av_all: + this x softmax CE toward the best move(s); other targets ignore it
    learning_rate: float = 1e-4  # Adam (paper: 1e-4 main, 4e-4 ablation)
    lr_schedule: Literal["constant", "cosine"] = "constant"  # cosine: 1 -> 0 over the budget (max_steps or max_seconds, whichever ends first)
    batch_size: int = 256  # examples per step (AV: board-move pairs)
    # data parallelism: the batch is split over this many devices (0: all of jax.devices(); the
    # distill.py CLI shows a CPU-only host as one device per core, so 0 splits it over the cores)
    devices: int = 0
    max_steps: int = 2000  # training steps
    max_seconds: float = 0.0  # stop after this wall time too, summed over resumed sessions (0: no limit)
    grad_clip: float = 1.0  # global-norm gradient clipping
    ema_decay: float = 0.99  # Polyak averaging of parameters, used for evaluation
    checkpoint_every: int = 500  # steps between saves of the training state (resume continues from the last)
    log_every: int = 50  # steps between TensorBoard scalars
    progress: bool = True  # rich progress bar
    seed: int = 0  # network initialisation and batch order

    def __post_init__(self):
        check_choices(self)
        if self.devices < 0:
            raise ValueError(f"train.devices must be >= 0 (0: every device), got {self.devices}")
        check_at_least(self, 1, "batch_size", "checkpoint_every", "log_every", prefix="train.")
        check_at_least(self, 0, "max_steps", "max_seconds", "grad_clip", "seed", prefix="train.")
        check_unit_interval(self, "ema_decay", prefix="train.")
        if self.learning_rate <= 0:
            raise ValueError(f"train.learning_rate must be > 0, got {self.learning_rate:g}")


@dataclasses.dataclass(frozen=True)
class EvaluateConfig:
    net: str = ""  # the student's network directory, or its train.out_dir ("" -> train.out_dir)
    player: str = "student"  # "student" (that network) or any arena agent spec: random, "stockfish:nodes=500", ...
    max_boards: int = 1000  # held-out boards for action accuracy and Kendall's tau, and per source for imitation
    puzzles: str = "puzzles/lichess_puzzles_themed.csv"  # relative to the data dir
    max_puzzles: int = 1000  # puzzles evaluated (first N of the file)
    out: str = ""  # JSON path ("" -> <net or train.out_dir>/eval_<player>.json); every report is also appended to the .jsonl beside it
    seed: int = 0  # board and puzzle sampling

    def __post_init__(self):
        check_at_least(self, 0, "max_boards", "max_puzzles", "seed", prefix="evaluate.")


@dataclasses.dataclass(frozen=True)
class WarmStartConfig:
    """`distill.py warm-start`: the self-play network family trained on data.records (distill/warm_start.py)."""

    selfplay: str = "configs/chess_cpu.yaml"  # self-play preset whose network (and learner loss) is trained
    selfplay_set: tuple[str, ...] = ()  # overrides of that preset, e.g. [network.family=chessformer]
    out_dir: str = "runs/distill/warm_start"  # network/ (what selfplay's init.network reads), warm_start.json
    # a network directory to continue from (a fresh optimiser at step 0) instead of random weights: its
    # shape, or grown by options that start at zero (network.resnet.value_input_skip); "": random
    init_network: str = ""
    batch_size: int = 256  # boards per step
    # SGD + momentum, as the self-play learner; 10x lower from 60% and again from 85% of the budget
    # (max_steps or max_seconds, whichever ends the run first)
    learning_rate: float = 0.02
    max_steps: int = 4000  # training steps
    max_seconds: float = 0.0  # stop after this wall time too, summed over resumed sessions (0: no limit)
    checkpoint_minutes: float = 5.0  # training state saved this often (and at the end); 0: at the end only
    policy_temperature: float = 0.0  # 0: one-hot on the best move; > 0: softmax(move win probs / T)
    max_boards: int = 0  # training boards read (0: all of the train split)
    # per board, this many of its successors (after legal moves drawn uniformly) join training as
    # value-only boards valued 1 - that move's win probability: the value the search reads one ply
    # down, blunders included (distill/warm_start.py successor_boards)
    successor_boards: int = 0
    # the finished ResNet's value offset for the side to move (a bonus that regresses from the
    # successor boards' targets) is fitted on this many held-out boards and their successors and
    # folded into its output bias, as `distill.py calibrate` does (0: off)
    calibrate_boards: int = 500
    log_every: int = 100  # steps between printed losses
    progress: bool = True  # print the losses
    seed: int = 0  # network initialisation and batch order
    # data parallelism: each batch split over this many devices, the state replicated
    # (learner/parallel.py; 0: all of jax.devices())
    devices: int = 0

    def __post_init__(self):
        if self.devices < 0:
            raise ValueError(f"warm_start.devices must be >= 0 (0: every device), got {self.devices}")
        check_at_least(self, 1, "batch_size", "log_every", prefix="warm_start.")
        check_at_least(self, 0, "max_steps", "max_seconds", "policy_temperature", "max_boards", "seed",
                       "checkpoint_minutes", "successor_boards", "calibrate_boards", prefix="warm_start.")
        if self.learning_rate <= 0:
            raise ValueError(f"warm_start.learning_rate must be > 0, got {self.learning_rate:g}")


@dataclasses.dataclass(frozen=True)
class CalibrateConfig:
    """`distill.py calibrate`: a ResNet's value side-to-move offset measured and removed (distill/calibrate.py)."""

    network: str = ""  # the network directory to calibrate (e.g. a warm start's out_dir/network)
    out: str = ""  # where the calibrated copy goes ("": <network>_calibrated); the original is kept
    # held-out boards (data.records' test split), each with every successor Stockfish valued (~35 a board)
    max_boards: int = 500
    # keys of the copy's recorded search to change (what mcts:net= and uci.py play), e.g.
    # [policy=puct, q_transform=fpu]: a value without the offset may serve another search best
    search: tuple[str, ...] = ()

    def __post_init__(self):
        check_at_least(self, 1, "max_boards", prefix="calibrate.")


@dataclasses.dataclass(frozen=True)
class DistillConfig:
    annotate: AnnotateConfig = AnnotateConfig()
    data: DataConfig = DataConfig()
    student: StudentConfig = StudentConfig()
    train: TrainConfig = TrainConfig()
    evaluate: EvaluateConfig = EvaluateConfig()
    warm_start: WarmStartConfig = WarmStartConfig()
    calibrate: CalibrateConfig = CalibrateConfig()

    def __post_init__(self):
        if self.student.family == "chessformer" and self.data.target == "av":
            raise ValueError("the Chessformer has no action input: train it with data.target av_all, sv or bc")
        if self.train.best_move_weight < 0:
            raise ValueError(f"train.best_move_weight must be >= 0 (0: AV-all's BCE alone), got "
                             f"{self.train.best_move_weight}")
