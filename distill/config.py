"""Distillation configs: frozen dataclasses, loaded from configs/distill_*.yaml with --set overrides."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class AnnotateConfig:
    pgn: tuple[str, ...] = ("games/lichess_user_export_3970.pgn",
                            "games/tcec_superfinals_s10-s13_400.pgn",
                            "games/lichess_100_games_with_evals.pgn")  # PGNs, relative to the data dir
    out_dir: str = "runs/distill/annotations"  # record shards go here (git-ignored runs/)
    sampler: str = "unique"  # "unique" (each FEN once) or "weighted" (also keep occurrence counts)
    max_boards: int = 20_000  # boards to annotate (games in seeded random order, whole games)
    seed: int = 0  # game order
    workers: int = 1  # Stockfish processes (one thread each)
    nodes_per_move: int = 500  # search nodes per legal move (0: use time_per_move)
    time_per_move: float = 0.0  # seconds per legal move (the paper: 0.05) when nodes_per_move is 0
    engine: str = ""  # Stockfish binary ("" -> $STOCKFISH_BIN, /usr/games/stockfish, PATH)
    shard_size: int = 10_000  # records per msgpack shard


@dataclasses.dataclass(frozen=True)
class DataConfig:
    records: str = "runs/distill/annotations"  # record directory (annotations or a frozen corpus)
    target: str = "av"  # "av" (action values), "sv" (state values) or "bc" (behavioural cloning)
    test_fraction: float = 0.05  # share of GAMES held out for evaluation
    sampler: str = "unique"  # "unique": uniform over boards; "weighted": by occurrence count
    bc_soft: bool = False  # BC from the record's soft policy (self-play visits) instead of one move
    sv_from: str = "value"  # SV target: "value" (oracle/root value) or "outcome" (game result)


@dataclasses.dataclass(frozen=True)
class StudentConfig:
    family: str = "searchless"  # "searchless" (77 FEN tokens) or "chessformer" (64 square tokens)
    preset: str = ""  # a models/presets.py name (e.g. searchless_9m); "" = the fields below
    num_bins: int = 128  # K value bins (AV/SV)
    embedding_dim: int = 64  # model width
    num_layers: int = 2  # transformer blocks
    num_heads: int = 4  # attention heads
    widening_factor: int = 4  # MLP hidden = widening_factor * embed_dim


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    out_dir: str = "runs/distill/av"  # checkpoints, TensorBoard logs, train.json
    loss: str = "ce"  # "ce" (one-hot bins, the paper), "hl_gauss" (smoothed bins) or "l2" (ablation)
    learning_rate: float = 1e-4  # Adam (paper: 1e-4 main, 4e-4 ablation)
    batch_size: int = 256  # examples per step (AV: board-move pairs)
    max_steps: int = 2000  # training steps
    max_seconds: float = 0.0  # stop after this wall time too (0: no time limit)
    grad_clip: float = 1.0  # global-norm gradient clipping
    ema_decay: float = 0.99  # Polyak averaging of parameters, used for evaluation
    checkpoint_every: int = 500  # steps between orbax checkpoints (resume continues from the last)
    log_every: int = 50  # steps between TensorBoard scalars
    progress: bool = True  # rich progress bar
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class PolicyConfig:
    temperature: float = 0.0  # softmax sampling temperature for the first moves (0: argmax)
    temperature_plies: int = 0  # plies of the game that use `temperature`
    repetition_draw: bool = True  # a move completing a threefold repetition is scored 50%


@dataclasses.dataclass(frozen=True)
class EvaluateConfig:
    checkpoint: str = ""  # student checkpoint dir ("" -> train.out_dir)
    player: str = "student"  # "student", "random" or "stockfish" (baselines)
    max_boards: int = 1000  # held-out boards for action accuracy and Kendall's tau
    puzzles: str = "puzzles/lichess_puzzles_themed.csv"  # relative to the data dir
    max_puzzles: int = 1000  # puzzles evaluated (first N of the file)
    out: str = ""  # JSON path ("" -> <checkpoint>/eval_<player>.json)
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class DistillConfig:
    annotate: AnnotateConfig = AnnotateConfig()
    data: DataConfig = DataConfig()
    student: StudentConfig = StudentConfig()
    train: TrainConfig = TrainConfig()
    policy: PolicyConfig = PolicyConfig()
    evaluate: EvaluateConfig = EvaluateConfig()
