"""Elo matches between agents: two players head to head, or a round robin of several.

    python match.py "stockfish:skill=0,nodes=1000" random --games 20 --book 2moves_v1.epd
    python match.py random "stockfish:skill=0" "mcts:ckpt=runs/x/ckpt,sims=64" --games 10 --workers 2
    python match.py "mcts:ckpt=new,sims=200" "mcts:ckpt=old,sims=200" --games 400 --sprt 0,10

Writes every game to <out>/games.pgn as it finishes and the results to <out>/results.json, and
prints the score, Elo with 95% intervals and (for 3+ players) BayesElo-style ratings.
A bad spec, book or missing checkpoint/engine prints one line and exits with status 2.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path


def _book_path(name: str | None) -> str | None:
    """A book path, or a file name under the data dir's openings/ (e.g. '2moves_v1.epd')."""
    if name is None or os.path.exists(name):
        return name
    from configs.paths import data_dir
    candidate = data_dir() / "openings" / name
    if candidate.exists():
        return str(candidate)
    raise FileNotFoundError(f"opening book '{name}' not found (nor {candidate})")


def _sprt(text: str | None):
    if text is None:
        return None
    from arena.sprt import SprtConfig
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"--sprt '{text}': expected elo0,elo1[,alpha,beta]") from None
    if len(values) not in (2, 4):
        raise ValueError(f"--sprt '{text}': expected elo0,elo1[,alpha,beta]")
    return SprtConfig(*values)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="agent specs: random | stockfish:skill=K,nodes=N|movetime=MS | "
                                       "uci:cmd=\"...\" | mcts:ckpt=PATH,sims=N | policy:ckpt=PATH | "
                                       "av:/sv:/bc:ckpt=PATH  (each also takes name=...)")
    p.add_argument("players", nargs="+", help="agent specs (2: a match, 3+: a round robin)")
    p.add_argument("--games", type=int, default=10, help="games per pairing (even: both colours)")
    p.add_argument("--book", help="opening book .epd/.pgn/.tsv (path, or a file in <data>/openings/)")
    p.add_argument("--order", choices=("random", "sequential"), default="random")
    p.add_argument("--book-start", type=int, default=0, help="first entry for sequential order")
    p.add_argument("--seed", type=int, default=0, help="seed of the random opening choice")
    p.add_argument("--workers", type=int, default=1, help="games in parallel (processes)")
    p.add_argument("--max-plies", type=int, default=512, help="draw after this many plies")
    p.add_argument("--resign-cp", type=int, help="resign adjudication threshold (centipawns)")
    p.add_argument("--resign-moves", type=int, default=3)
    p.add_argument("--draw-cp", type=int, help="draw adjudication threshold (centipawns)")
    p.add_argument("--draw-moves", type=int, default=8)
    p.add_argument("--draw-move-number", type=int, default=40)
    p.add_argument("--nodes", type=int, help="nodes/simulations per move for every agent")
    p.add_argument("--movetime", type=int, help="milliseconds per move for every agent")
    p.add_argument("--sprt", help="elo0,elo1[,alpha,beta]: stop when decided (2 players)")
    p.add_argument("--anchor", help="player name whose rating is fixed at 0 (default: the first)")
    p.add_argument("--out", help="output directory (default runs/match/<time>)")
    p.add_argument("--event", default="zerochess match")
    p.add_argument("--no-progress", action="store_true")
    return p


def _fmt(x) -> str:
    return "?" if x is None else x if isinstance(x, str) else f"{x:+.0f}"


def print_summary(summary: dict) -> None:
    from rich.console import Console
    from rich.table import Table
    console = Console(width=None if sys.stdout.isatty() else 150)
    pairs = Table(title="Results (first player's view)")
    for col in ("player", "opponent", "W", "D", "L", "score", "Elo [95%]", "Elo pairs [95%]",
                "pentanomial"):
        pairs.add_column(col, overflow="fold")
    for p in summary["pairings"]:
        e, ep = p["elo"], p["elo_pentanomial"]
        pairs.add_row(p["player"], p["opponent"], str(p["wins"]), str(p["draws"]), str(p["losses"]),
                      f"{p['score']:.3f}", f"{_fmt(e['elo'])} [{_fmt(e['lower'])}, {_fmt(e['upper'])}]",
                      f"{_fmt(ep['elo'])} [{_fmt(ep['lower'])}, {_fmt(ep['upper'])}]",
                      " ".join(map(str, p["pentanomial"])))
    console.print(pairs)
    for p in summary["pairings"]:
        if "sprt" in p:
            s = p["sprt"]
            console.print(f"SPRT elo0={s['elo0']} elo1={s['elo1']} alpha={s['alpha']} "
                          f"beta={s['beta']}: LLR {s['llr']:.2f} [{s['lower']:.2f}, {s['upper']:.2f}]"
                          f" -> {s['decision']}")
    if "ratings" in summary:
        r = summary["ratings"]
        table = Table(title=f"Ratings (BayesElo model, anchor {r['anchor']} = 0, "
                            f"advantage {r['advantage']:.1f}, drawelo {r['draw_elo']:.1f})")
        for col in ("rank", "player", "rating", "95% interval", "games", "score"):
            table.add_column(col, overflow="fold")
        for i, row in enumerate(r["table"], 1):
            table.add_row(str(i), row["name"], f"{row['rating']:+.0f}",
                          f"[{row['lower']:+.0f}, {row['upper']:+.0f}]", str(row["games"]),
                          f"{row['score']:.3f}")
        console.print(table)
    per_game = summary["seconds_per_game"]
    console.print(f"{summary['games_played']} games in {summary['wall_seconds']:.1f} s wall "
                  f"({per_game if per_game is None else f'{per_game:.2f}'} s per game; mean game "
                  f"{summary['mean_game_seconds'] or 0:.2f} s)"
                  + (f"; stopped: {summary['stopped']}" if summary["stopped"] else ""))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from arena.match import MatchConfig, run_match
    from arena.play import Adjudication
    try:
        if len(args.players) < 2:
            raise ValueError("give at least two agent specs")
        out = Path(args.out or Path("runs") / "match" / datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
        rules = Adjudication(args.max_plies, args.resign_cp, args.resign_moves, args.draw_cp,
                             args.draw_moves, args.draw_move_number)
        cfg = MatchConfig(players=tuple(args.players), games=args.games, book=_book_path(args.book),
                          order=args.order, book_start=args.book_start, seed=args.seed,
                          workers=args.workers, rules=rules, nodes=args.nodes,
                          movetime=args.movetime / 1000 if args.movetime else None,
                          sprt=_sprt(args.sprt), anchor=args.anchor,
                          pgn_path=str(out / "games.pgn"), json_path=str(out / "results.json"),
                          event=args.event)
        if any(a.startswith(("mcts", "policy", "av", "sv", "bc")) for a in args.players):
            from configs.runtime import enable_compilation_cache
            os.environ["JAX_COMPILATION_CACHE_DIR"] = enable_compilation_cache()  # for workers too
        summary = run_match(cfg, progress=not args.no_progress)
    except (ValueError, FileNotFoundError) as e:
        print(f"match.py: {e}", file=sys.stderr)
        return 2
    print_summary(summary)
    print(f"games: {cfg.pgn_path}\nresults: {cfg.json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
