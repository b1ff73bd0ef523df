"""Where a player loses: its blunders in a match's PGN, found by Stockfish, as JSON.

    .venv/bin/python bench/blunders.py runs/match/x/games.pgn --player distilled
    .venv/bin/python bench/blunders.py games.pgn --player mcts --depth 12 --drop 300 --show 20

For every move of the player (the games whose White or Black name contains `--player`), Stockfish at
`--depth` scores the position before and after it from the player's side; a blunder loses at least
`--drop` centipawns while the player was not already lost (above -600). It counts blunders per game,
how many Stockfish answers with a capture (a piece left hanging, an exchange miscounted: what a value
head that does not know material lets through its search) and lists the first `--show` of them
(FEN, the move, Stockfish's move, the scores, the punishing reply). One JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LOST = -600  # centipawns: a player this far behind has no blunder left to make
MATE = 3000  # centipawns a mate counts as


def blunders(pgn_path: str | Path, player: str, engine, depth: int, drop: int, show: int) -> dict:
    """Stockfish's verdict on `player`'s moves in every game of `pgn_path` it played."""
    import chess
    import chess.engine
    import chess.pgn

    limit = chess.engine.Limit(depth=depth)

    def score(info, side) -> int:
        return info["score"].pov(side).score(mate_score=MATE)

    games = moves = found = answered_by_capture = 0
    listed = []
    with open(pgn_path) as f:
        while (game := chess.pgn.read_game(f)) is not None:
            names = game.headers.get("White", ""), game.headers.get("Black", "")
            if player not in names[0] and player not in names[1]:
                continue
            side = chess.WHITE if player in names[0] else chess.BLACK
            games += 1
            board = game.board()
            for move in game.mainline_moves():
                if board.turn != side:
                    board.push(move)
                    continue
                info = engine.analyse(board, limit)
                before, best = score(info, side), info["pv"][0]
                fen = board.fen()
                board.push(move)
                moves += 1
                after_info = engine.analyse(board, limit)
                after = score(after_info, side)
                if before - after >= drop and before > LOST:
                    found += 1
                    reply = after_info.get("pv", [None])[0]
                    capture = reply is not None and board.is_capture(reply)
                    answered_by_capture += capture
                    if len(listed) < show:
                        listed.append({"fen": fen, "move": move.uci(), "stockfish": best.uci(), "before": before,
                                       "after": after, "reply": reply.uci() if reply else None, "capture": capture})
    return {"games": games, "moves": moves, "blunders": found,
            "blunders_per_game": found / max(games, 1), "answered_by_capture": answered_by_capture,
            "first": listed}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pgn", help="a match's games.pgn")
    parser.add_argument("--player", required=True, help="part of the player's name in the PGN's White/Black")
    parser.add_argument("--depth", type=int, default=10, help="Stockfish's depth per position")
    parser.add_argument("--drop", type=int, default=200, help="centipawns a move must lose to count")
    parser.add_argument("--show", type=int, default=12, help="blunders listed")
    parser.add_argument("--stockfish", default=None, help="the Stockfish binary (default: found as arena finds it)")
    args = parser.parse_args(argv)
    if not Path(args.pgn).is_file():
        raise SystemExit(f"bench/blunders.py: {args.pgn} not found: give a match's games.pgn")
    import chess.engine

    from runtime import find_stockfish
    try:
        binary = find_stockfish(args.stockfish)
    except FileNotFoundError as e:
        raise SystemExit(f"bench/blunders.py: {e}") from None
    start = time.perf_counter()
    engine = chess.engine.SimpleEngine.popen_uci(binary)
    try:
        out = blunders(args.pgn, args.player, engine, args.depth, args.drop, args.show)
    finally:
        engine.quit()
    if not out["games"]:
        raise SystemExit(f"bench/blunders.py: no game of {args.pgn} names a player containing {args.player!r}")
    print(json.dumps({"bench": "blunders", "pgn": str(args.pgn), "player": args.player, "depth": args.depth,
                      "drop": args.drop, **out, "seconds": time.perf_counter() - start,
                      "load_average": os.getloadavg()[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
