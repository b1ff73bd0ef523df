"""Freezing the replay into an immutable corpus for distillation (runs/<name>/corpus/).

One map record per position (replay/shards.py `pack_map`: a msgpack map framed with its CRC32), in
shards `shard-00000.msgpack`, ... (the shard layout and key names of distill/records.py, so
`distill.records.iter_records` reads a chess corpus directly; corpora frozen before the checksum hold
bare maps, which it reads too):
    game, ply                  game id and half-moves since the start
    actions                    pgx actions from the start up to this position (rebuilds it exactly)
    legal_actions              pgx ids of the legal moves; `policy`, `child_q` are over them
    policy, child_q, root_value, z   search targets and the outcome, side to move, z in {-1, 0, 1}
    source                     "selfplay"
Chess adds `fen`, `moves` (legal moves, UCI), `history` (UCI moves from the start), `values`
(child Q as win probability in [0, 1]), `value` (root value, same scale), `best` (the move played
after the search), `outcome` (z in [0, 1]). `manifest.json` lists each shard with its sha256;
files are made read-only and a non-empty corpus directory is never written into.

A finished (or stopped) run's replay is frozen from the command line too:
    python -m replay.corpus runs/<name>                      # -> runs/<name>/corpus/
    python -m replay.corpus runs/<name> --out data/corpus-a  # anywhere else
    python -m replay.corpus runs/a runs/b --out data/corpus-ab  # several runs, one corpus
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Sequence

from replay import chunks, shards
from replay.record import GameRecord

POSITIONS_PER_SHARD = 50_000
SYNC_EVERY = 4096  # rows written between fsyncs (the manifest, written last, is what makes a corpus whole)


def _chess_rows(record: GameRecord):
    """Per-position chess extras via python-chess (FEN, UCI), replaying the pgx actions."""
    import chess

    from games import chess_bridge  # chess only; imported lazily

    board = chess.Board()
    history: list[str] = []
    offsets = record.offsets()
    for t in range(record.plies):
        legal = record.legal_actions[offsets[t]:offsets[t + 1]]
        moves = [chess_bridge.pgx_action_to_move(int(a), board).uci() for a in legal]
        played = chess_bridge.pgx_action_to_move(int(record.actions[t]), board)
        yield {
            "fen": board.fen(), "moves": moves, "history": list(history),
            "values": [(float(q) + 1) / 2 for q in record.child_q[offsets[t]:offsets[t + 1]]],
            "value": (float(record.root_value[t]) + 1) / 2, "best": played.uci(),
        }
        board.push(played)
        history.append(played.uci())


def rows(record: GameRecord, game_prefix: str = ""):
    """The corpus rows (dicts) of one game, one per position; its id is `game_prefix` + the run's id."""
    offsets = record.offsets()
    z = record.outcome()
    extras = _chess_rows(record) if record.game == "chess" else None
    for t in range(record.plies):
        lo, hi = int(offsets[t]), int(offsets[t + 1])
        row = {
            "game": game_prefix + record.game_id, "ply": t, "actions": record.actions[:t].tolist(),
            "legal_actions": record.legal_actions[lo:hi].tolist(),
            "policy": record.policy[lo:hi].tolist(), "child_q": record.child_q[lo:hi].tolist(),
            "root_value": float(record.root_value[t]), "z": float(z[t]),
            "outcome": (float(z[t]) + 1) / 2, "source": "selfplay",
        }
        if extras is not None:
            row.update(next(extras))
        yield row


def freeze(replay_dirs: str | os.PathLike | Sequence[str | os.PathLike], out_dir: str | os.PathLike,
           positions_per_shard: int = POSITIONS_PER_SHARD) -> dict:
    """Writes the corpus of every game in `replay_dirs` (one run's replay/, or several: each game id
    then starts with its run's index in `replays`, "1:a0-7", so that two runs' games stay apart, e.g.
    in the held-out split); returns (and writes) its manifest."""
    dirs = [replay_dirs] if isinstance(replay_dirs, (str, os.PathLike)) else list(replay_dirs)
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty: a frozen corpus is immutable, freeze into a new directory")
    out.mkdir(parents=True, exist_ok=True)
    games, positions, pending = 0, 0, []
    with shards.FrameWriter(out, shards.RECORD_SHARDS, positions_per_shard) as writer:
        for i, replay_dir in enumerate(dirs):
            prefix = f"{i}:" if len(dirs) > 1 else ""
            for record in chunks.read_all(replay_dir):
                games += 1
                for row in rows(record, prefix):
                    pending.append(shards.pack_map(row))
                    positions += 1
                if len(pending) >= SYNC_EVERY:
                    writer.append(pending)
                    pending = []
        writer.append(pending)
    files = shards.RECORD_SHARDS.paths(out)
    manifest = {
        "games": games, "positions": positions, "replays": [str(Path(d).resolve()) for d in dirs],
        "shards": [{"file": p.name, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()} for p in files],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    for p in [*files, out / "manifest.json"]:
        os.chmod(p, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    return manifest


def main(argv=None) -> int:
    import argparse
    import sys

    from replay.record import RecordError
    p = argparse.ArgumentParser(prog="python -m replay.corpus",
                                description="freeze the replay of one run (or several) into a corpus")
    p.add_argument("run_dirs", nargs="+", help="runs/<name>/ (its replay/ is read); several: one corpus of all")
    p.add_argument("--out", default="", help="corpus directory (default: <run_dir>/corpus; required for several)")
    args = p.parse_args(argv)
    if len(args.run_dirs) > 1 and not args.out:
        print("replay.corpus: several runs make one corpus: name it with --out DIR", file=sys.stderr)
        return 2
    replay_dirs = [Path(d) / "replay" for d in args.run_dirs]
    out = Path(args.out or Path(args.run_dirs[0]) / "corpus")
    for replay_dir in replay_dirs:
        if not (replay_dir.is_dir() and chunks.chunk_paths(replay_dir)):
            print(f"replay.corpus: {replay_dir} holds no replay chunks: give a run directory (runs/<name>)",
                  file=sys.stderr)
            return 2
    fresh = not out.exists()
    try:
        manifest = freeze(replay_dirs, out)
    except FileExistsError as e:
        print(f"replay.corpus: {e}", file=sys.stderr)
        return 2
    except RecordError as e:  # the partial corpus goes; the replay is untouched
        if fresh:
            shutil.rmtree(out, ignore_errors=True)
        print(f"replay.corpus: {e}; `selfplay.py --resume` of the run sets damaged chunks aside "
              "(replay/quarantine/), then freeze again", file=sys.stderr)
        return 2
    print(json.dumps({"corpus": str(out), "games": manifest["games"], "positions": manifest["positions"],
                      "shards": len(manifest["shards"])}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
