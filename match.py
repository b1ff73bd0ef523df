"""Elo matches between agents: two players head to head, or a round robin of several.

    python match.py "stockfish:skill=0,nodes=1000" random --games 20 --book 2moves_v1.epd
    python match.py random "stockfish:skill=0" "mcts:net=runs/x/network,sims=64" --games 10 --workers 2
    python match.py "mcts:net=new,sims=200" "mcts:net=old,sims=200" --games 400 --sprt 0,10
    python match.py --config configs/match.yaml --set games=100 rules.max_plies=300 sprt.elo1=10
    python match.py --suite puzzles,wac,sts --limit 200 random "stockfish:skill=0" "mcts:net=runs/x/network"

Settings are arena.play.match.MatchConfig, loaded from `--config` YAML, then the flags below (shortcuts),
then dotted `--set KEY=VALUE` overrides; positional agent specs replace `players`.
Writes every game to <out>/games.pgn as it finishes and the results to <out>/results.json, and
prints the score, Elo with 95% intervals and (for 3+ players) BayesElo-style ratings.
A bad config key or value, spec, book or missing network directory/engine prints one line and
exits with status 2.

With --suite, no games are played: each agent solves test positions (arena/suites: Lichess
puzzles with the whole line, EPD best-move suites, STS points), and one table compares them;
the reports go to <out>/suites.json.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path

NETWORK_KINDS = ("mcts", "policy", "av", "sv", "bc")  # specs whose agents run JAX networks


def _book_path(name: str | None) -> str | None:
    """A book path, or a file name under the data dir's openings/ (e.g. '2moves_v1.epd')."""
    from arena import book_path
    return None if name is None else str(book_path(name))


def _sprt(text: str) -> dict:
    """'elo0,elo1[,alpha,beta]' -> the sprt section of the config."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"--sprt '{text}': expected elo0,elo1[,alpha,beta]") from None
    if len(values) not in (2, 4):
        raise ValueError(f"--sprt '{text}': expected elo0,elo1[,alpha,beta]")
    return dict(zip(("elo0", "elo1", "alpha", "beta"), values))


# flag -> dotted config key (flags left unset do not override the config)
_SHORTCUTS = {"games": "games", "book": "book", "order": "order", "book_start": "book_start",
              "seed": "seed", "workers": "workers", "max_plies": "rules.max_plies",
              "resign_cp": "rules.resign_cp", "resign_moves": "rules.resign_moves",
              "draw_cp": "rules.draw_cp", "draw_moves": "rules.draw_moves",
              "draw_move_number": "rules.draw_move_number", "nodes": "nodes",
              "movetime": "movetime_ms", "anchor": "anchor", "event": "event"}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="agent specs: random | stockfish:skill=K,nodes=N|movetime=MS | "
                                       "uci:cmd=\"...\" | mcts:net=DIR,sims=N[,SearchConfig key=value...] | "
                                       "policy:net=DIR | av:/sv:/bc:net=DIR  (each also takes name=...; "
                                       "DIR is a network directory)")
    p.add_argument("players", nargs="*", help="agent specs (2: a match, 3+: a round robin)")
    p.add_argument("--config", help="match config YAML (arena.play.match.MatchConfig), e.g. configs/match.yaml")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="dotted config overrides, e.g. --set games=100 rules.max_plies=300 (repeatable)")
    p.add_argument("--games", type=int, help="games per pairing (even: both colours; default 10)")
    p.add_argument("--book", help="opening book .epd/.pgn/.tsv (path, or a file in <data>/openings/)")
    p.add_argument("--order", choices=("random", "sequential"), help="opening order (default random)")
    p.add_argument("--book-start", type=int, help="first entry for sequential order")
    p.add_argument("--seed", type=int, help="seed of the random opening choice")
    p.add_argument("--workers", type=int, help="games in parallel (processes)")
    p.add_argument("--max-plies", type=int, help="draw after this many plies (default 512)")
    p.add_argument("--resign-cp", type=int, help="resign adjudication threshold (centipawns)")
    p.add_argument("--resign-moves", type=int)
    p.add_argument("--draw-cp", type=int, help="draw adjudication threshold (centipawns)")
    p.add_argument("--draw-moves", type=int)
    p.add_argument("--draw-move-number", type=int)
    p.add_argument("--nodes", type=int, help="nodes/simulations per move for every agent")
    p.add_argument("--movetime", type=int, help="milliseconds per move for every agent")
    p.add_argument("--sprt", help="elo0,elo1[,alpha,beta]: stop when decided (2 players)")
    p.add_argument("--anchor", help="player name whose rating is fixed at 0 (default: the first)")
    p.add_argument("--out", help="output directory (default runs/match/<time>)")
    p.add_argument("--event", help="PGN Event header")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--suite", help="solve test suites instead of playing: comma list of puzzles, "
                                   "puzzles-10k, wac, ecm, bk, arasan, bt2630, sts, ... or .csv/.epd paths")
    p.add_argument("--limit", type=int, help="--suite: positions per suite (the file's first; STS by theme)")
    p.add_argument("--themes", type=int, default=8, help="--suite: puzzle themes shown in the table")
    return p


def run_suites(args: argparse.Namespace) -> int:
    """--suite mode: every player on every suite, one table, <out>/suites.json."""
    import json

    from rich.console import Console

    from arena import Limit, render_table, run_suite

    players = list(args.players)
    if not players:
        raise ValueError("--suite needs at least one agent spec")
    move_limit = (Limit(nodes=args.nodes, movetime=args.movetime / 1000 if args.movetime else None)
                  if args.nodes or args.movetime else None)
    reports = [run_suite(spec, suite, limit=args.limit, workers=args.workers or 1, move_limit=move_limit,
                         progress=not args.no_progress)
               for suite in args.suite.split(",") for spec in players]
    Console(width=None if sys.stdout.isatty() else 150).print(
        render_table(reports, puzzle_themes=args.themes, title="Suites"))
    out = Path(args.out or Path("runs") / "suites" / datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "suites.json").write_text(json.dumps([r.to_dict(items=True) for r in reports], indent=1))
    print(f"reports: {out / 'suites.json'}")
    return 0


def load_config(args: argparse.Namespace):
    """The MatchConfig of the command line: YAML < flags < --set; the book resolved, the PGN and
    JSON paths under --out (or runs/match/<time>) unless the config names them."""
    import dataclasses

    from arena import MatchConfig
    from configs import load

    extra: dict = {}
    for flag, key in _SHORTCUTS.items():
        value = getattr(args, flag)
        if value is not None:
            node = extra
            *parents, leaf = key.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value
    if args.sprt is not None:
        extra["sprt"] = _sprt(args.sprt)
    if args.players:
        extra["players"] = list(args.players)
    if args.config is None and not args.players:
        raise ValueError("give at least two agent specs (or a --config with players)")
    cfg = load(MatchConfig, args.config, args.set, extra)
    out = Path(args.out or Path("runs") / "match" / datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    return dataclasses.replace(cfg, book=_book_path(cfg.book),
                               pgn_path=cfg.pgn_path or str(out / "games.pgn"),
                               json_path=cfg.json_path or str(out / "results.json"))


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
    from arena import run_match
    from configs import ConfigError
    if args.suite:
        if any(spec.strip().lower().startswith(NETWORK_KINDS) for spec in args.players):
            from runtime import enable_compilation_cache
            os.environ["JAX_COMPILATION_CACHE_DIR"] = enable_compilation_cache()
        try:
            return run_suites(args)
        except (ValueError, FileNotFoundError) as e:
            print(f"match.py: {e}", file=sys.stderr)
            return 2
    try:
        cfg = load_config(args)
        if any(spec.strip().lower().startswith(NETWORK_KINDS) for spec in cfg.players):
            from runtime import enable_compilation_cache
            os.environ["JAX_COMPILATION_CACHE_DIR"] = enable_compilation_cache()  # for workers too
        summary = run_match(cfg, progress=not args.no_progress)
    except ConfigError as e:
        print(f"match.py: config error: {e}", file=sys.stderr)
        return 2
    except (ValueError, FileNotFoundError) as e:
        print(f"match.py: {e}", file=sys.stderr)
        return 2
    print_summary(summary)
    print(f"games: {cfg.pgn_path}\nresults: {cfg.json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
