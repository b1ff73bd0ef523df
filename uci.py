"""A UCI engine around any zerochess agent, for chess GUIs and match runners.

    python uci.py --agent "mcts:net=runs/chess/network,sims=800"
    python uci.py --agent random

A bad spec, a missing network directory or engine prints one line and exits with status 2.
"""
from __future__ import annotations

import argparse
import io
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", required=True,
                        help="agent spec, e.g. 'mcts:net=DIR,sims=800' (DIR: a network directory)")
    args = parser.parse_args(argv)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from arena import UciEngine, make_agent
    try:
        if args.agent.strip().lower().startswith(("mcts", "policy", "av", "sv", "bc")):
            from runtime import enable_compilation_cache
            enable_compilation_cache()  # the first search compiles; later runs reuse it
        agent = make_agent(args.agent)
    except (ValueError, FileNotFoundError) as e:
        print(f"uci.py: {e}", file=sys.stderr)
        return 2

    def write(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    lines = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    try:
        UciEngine(agent, write).loop(lines)
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        agent.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
