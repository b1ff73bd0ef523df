"""Builds the probe set (arena/batched/probe.py): positions of real games that no annotation source reads,
each legal move valued by Stockfish. Run once; the file is committed, so runs need no Stockfish for it.

    .venv/bin/python scripts/build_probe.py                       # -> arena/data/probe.jsonl
    .venv/bin/python scripts/build_probe.py --per-game 5 --nodes-per-move 1000 --out /tmp/probe.jsonl

Boards that occur anywhere in the annotation sources of configs/distill_cpu.yaml (PGN games, opening
books, puzzle lines) are left out, so no distilled network has been trained on a probe position.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena import probe  # noqa: E402


def training_boards(config: str) -> set[str]:
    """Board keys of every board the distillation config's annotation would read."""
    from configs import load
    from distill import DistillConfig
    from distill.boards import read_units
    from runtime import data_file
    a = load(DistillConfig, config, []).annotate
    return {probe.board_key(gb.fen) for path in (*a.pgn, *a.positions)
            for _, boards in read_units([data_file(path)]) for gb in boards}


def annotate_positions(picked, nodes_per_move: int) -> list[probe.ProbePosition]:
    """Stockfish's value of every legal move of each picked position (distill/engine.py)."""
    import chess

    from distill import engine as engine_lib
    engine = engine_lib.open_engine()
    try:
        return [probe.ProbePosition(pid, fen, tuple(values), tuple(round(v, 5) for v in values.values()), start, history)
                for pid, start, history, fen in picked
                for values in [engine_lib.move_values(engine, chess.Board(fen), nodes_per_move)]]
    finally:
        engine.quit()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pgn", default=probe.PROBE_PGN, help="games to draw positions from (data dir relative)")
    parser.add_argument("--per-game", type=int, default=5, help="positions per game")
    parser.add_argument("--min-ply", type=int, default=10, help="no position before this ply")
    parser.add_argument("--nodes-per-move", type=int, default=1000, help="Stockfish nodes per legal move")
    parser.add_argument("--exclude-config", default="configs/distill_cpu.yaml",
                        help="leave out every board this distillation config annotates")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(probe.PROBE_FILE))
    args = parser.parse_args(argv)
    from runtime import data_file
    t0 = time.time()
    exclude = training_boards(args.exclude_config)
    picked = probe.pick_positions(data_file(args.pgn), args.per_game, args.min_ply, args.seed, exclude)
    positions = annotate_positions(picked, args.nodes_per_move)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("".join(p.to_json() + "\n" for p in positions))
    print(f"probe: {len(positions)} positions ({len(exclude)} training boards left out) -> {args.out} "
          f"in {time.time() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
