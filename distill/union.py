"""One record directory over several: links to every shard of each source, in order.

    python -m distill.union OUT SRC [SRC ...]

A student trains on one `data.records` directory; a search corpus beside teacher games (or corpora of
several runs) become one by links, not copies: OUT holds `shard-00000.msgpack`, ... as symbolic links
to the sources' shards (absolute paths, the sources' order), and its index. Rerunning the same command
relinks (a source that grew since is seen whole); a directory holding shards of its own is refused, so
nothing is ever overwritten. The train/test split is by game id (`records.split_of`), so a board's
split is the same in the union as in its source.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Sequence

from distill.records import INDEX_NAME, build_index, shard_paths
from replay import shards


def link_records(out: str | Path, sources: Sequence[str | Path]) -> dict:
    """Links every shard of `sources` into `out` (new, or an earlier union's) and indexes it.
    Returns {"out", "shards", "records"}; ValueError naming the problem for a source without shards,
    a repeated source, or an `out` that holds real shards."""
    out = Path(out)
    resolved = [Path(s).resolve() for s in sources]
    if not resolved:
        raise ValueError("name at least one record directory to link")
    targets = []
    for src, given in zip(resolved, sources):
        if src == out.resolve():
            raise ValueError(f"{given}: the output directory cannot be one of its sources")
        listed = shard_paths(src)
        if not listed:
            raise ValueError(f"{given}: no record shards (shard-00000.msgpack, ...) there")
        targets += [p.resolve() for p in listed]
    if len(set(resolved)) < len(resolved):
        raise ValueError("a source is named twice: its records would count double")
    links = shard_paths(out)
    own = [p for p in links if not p.is_symlink()]
    if own:
        raise ValueError(f"{out}: holds record shards of its own ({own[0].name}); name a new directory")
    out.mkdir(parents=True, exist_ok=True)
    for old in links:  # an earlier union's links: relinked below
        old.unlink()
    (out / INDEX_NAME).unlink(missing_ok=True)
    for i, target in enumerate(targets):
        (out / shards.RECORD_SHARDS.name(i)).symlink_to(target)
    return {"out": str(out), "shards": len(targets), "records": len(build_index(out)["shard"])}


def main(argv: Sequence[str] | None = None) -> None:
    import argparse

    p = argparse.ArgumentParser(prog="python -m distill.union", description=__doc__.split("\n")[0])
    p.add_argument("out", help="a new directory (or an earlier union's, to relink)")
    p.add_argument("sources", nargs="+", help="record directories (annotations, corpora, teacher games)")
    args = p.parse_args(argv)
    try:
        print(json.dumps(link_records(args.out, args.sources)))
    except ValueError as e:
        sys.exit(f"distill.union: {e}")


if __name__ == "__main__":
    main()
