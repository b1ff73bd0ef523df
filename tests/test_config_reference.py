"""docs/config.md lists every config key of the CLIs with its type, default and source comment:
regenerating it from the dataclasses (scripts/config_reference.py) must change nothing.
Fix a failure with: .venv/bin/python scripts/config_reference.py > docs/config.md"""
from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

from by_path import load_module

ROOT = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=None)
def _reference():
    return load_module(ROOT / "scripts" / "config_reference.py", "config_reference")


def test_docs_config_md_is_what_the_dataclasses_generate():
    ref = _reference()
    problems = ref.check((ROOT / "docs" / "config.md").read_text(), ref.generate() + "\n")
    assert not problems, ("docs/config.md is out of date; regenerate it with "
                          ".venv/bin/python scripts/config_reference.py > docs/config.md\n" + "\n".join(problems))


def test_every_leaf_field_of_every_cli_config_has_a_row():
    """Walks the dataclasses independently of the generator, so a key the generator skipped fails too."""
    ref = _reference()
    rows = ref.parse_rows((ROOT / "docs" / "config.md").read_text())

    def leaves(cls, prefix=""):
        for f in dataclasses.fields(cls):
            inner, _ = ref._unwrap_optional(ref.typing.get_type_hints(cls)[f.name])
            if dataclasses.is_dataclass(inner):
                yield from leaves(inner, f"{prefix}{f.name}.")
            else:
                yield prefix + f.name

    expected = {f"{cli}: {key}" for cli, spec, _ in ref.ROOTS for key in leaves(ref._root_class(spec))}
    assert expected - rows.keys() == set(), "config keys missing from docs/config.md"
    assert rows.keys() - expected == set(), "docs/config.md names keys that no config has"


def test_check_names_a_stale_default_and_a_removed_key():
    ref = _reference()
    fresh = ref.generate() + "\n"
    assert "| `learner.batch_size` | int | `256` |" in fresh
    stale = fresh.replace("| `learner.batch_size` | int | `256` |", "| `learner.batch_size` | int | `512` |")
    stale += "| `learner.no_such_key` | int | `1` | gone |\n"
    problems = "\n".join(ref.check(stale, fresh))
    assert "learner.batch_size: stale" in problems and "learner.no_such_key: in docs/config.md" in problems
