"""Writes docs/config.md, the reference of every config key of the CLIs, from the typed dataclasses.

Regenerate after changing a config dataclass (a field, its default or the comment beside it):

    .venv/bin/python scripts/config_reference.py > docs/config.md
    .venv/bin/python scripts/config_reference.py --check     # exit 1 naming the keys docs/config.md has wrong

Keys, types and defaults come from `dataclasses.fields` of each CLI's root config (selfplay.py:
`selfplay.config.SelfPlayConfig`, distill.py: `distill.config.DistillConfig`, match.py:
`arena.play.match.MatchConfig`), nested dataclasses as dotted keys; each key's line is the `# comment`
beside its field in the source (or the block of comment lines right above it), read with `tokenize`
and `ast`, so the source stays the one place a key is explained.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import functools
import importlib
import inspect
import io
import json
import sys
import tokenize
import types
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "config.md"
# (CLI, root dataclass as module:Name, how the CLI takes it)
ROOTS = (
    ("selfplay.py", "selfplay.config:SelfPlayConfig",
     "`selfplay.py --config configs/<preset>.yaml --set KEY=VALUE ...` ([selfplay.md](selfplay.md))"),
    ("distill.py", "distill.config:DistillConfig",
     "`distill.py annotate|train|evaluate|warm-start --config configs/distill_<preset>.yaml --set KEY=VALUE ...` "
     "([distill.md](distill.md))"),
    ("match.py", "arena.play.match:MatchConfig",
     "`match.py --config configs/match.yaml --set KEY=VALUE ...`; positional agent specs replace `players` "
     "and the flags are shortcuts for keys ([arena.md](arena.md))"),
)
NO_COMMENT = "(no comment beside this field in the source)"


@dataclasses.dataclass(frozen=True)
class Row:
    key: str  # dotted key, as --set takes it
    type: str
    default: str
    text: str

    def line(self) -> str:
        return f"| `{self.key}` | {self.type} | `{self.default}` | {self.text} |"


@dataclasses.dataclass(frozen=True)
class Section:
    key: str  # dotted prefix ("" for the root's own keys)
    cls: type
    text: str  # the class docstring and the field's comment
    rows: tuple[Row, ...]


def _root_class(spec: str) -> type:
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


@functools.lru_cache(maxsize=None)
def _comments(path: str) -> tuple[dict[int, str], set[int]]:
    """Comments of a source file: {line: text} and the lines that hold nothing but a comment."""
    text = Path(path).read_text()
    comments, code_lines = {}, set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                              tokenize.ENDMARKER):
            code_lines.update(range(tok.start[0], tok.end[0] + 1))
    return comments, {line for line in comments if line not in code_lines}


@functools.lru_cache(maxsize=None)
def field_comments(cls: type) -> dict[str, str]:
    """{field name: its comment} of dataclass `cls`: the comment block right above the field (no blank
    line between) and the comment beside it, on any line of its definition, joined."""
    path = inspect.getsourcefile(cls)
    comments, own_lines = _comments(path)
    tree = ast.parse(Path(path).read_text(), path)
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
    out = {}
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        above, line = [], stmt.lineno - 1
        while line in own_lines:
            above.insert(0, comments[line])
            line -= 1
        beside = [comments[n] for n in range(stmt.lineno, stmt.end_lineno + 1)
                  if n in comments and n not in own_lines]
        out[stmt.target.id] = " — ".join(part for part in (" ".join(above), " ".join(beside)) if part)
    return out


def _unwrap_optional(tp) -> tuple[object, bool]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(tp)) == 2:
            return args[0], True
    return tp, False


def type_name(tp) -> str:
    """A YAML reader's name for annotation `tp`."""
    inner, optional = _unwrap_optional(tp)
    if optional:
        return f"{type_name(inner)} or null"
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{v}`" for v in typing.get_args(tp))
    if origin in (tuple, list):
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        return f"list of {type_name(args[0])}" if args else "list"
    if dataclasses.is_dataclass(tp):
        return tp.__name__
    return getattr(tp, "__name__", str(tp))


def yaml_value(value) -> str:
    """`value` as it would be written in a YAML preset."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(yaml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|") if text else NO_COMMENT


def _sentence(text: str) -> str:
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def _doc(cls: type) -> str:
    doc = inspect.getdoc(cls) or ""
    if doc.startswith(cls.__name__ + "("):  # dataclasses' generated signature: no docstring
        return ""
    return " ".join(doc.split())


def sections(cls: type, prefix: str = "", text: str = "", optional: bool = False) -> list[Section]:
    """`cls`'s own keys as one Section, then one Section per nested dataclass, depth first."""
    hints = typing.get_type_hints(cls)
    comments = field_comments(cls)
    rows, nested = [], []
    for f in dataclasses.fields(cls):
        key, tp = prefix + f.name, hints[f.name]
        inner, is_optional = _unwrap_optional(tp)
        if dataclasses.is_dataclass(inner):
            nested.append((inner, key, comments.get(f.name, ""), is_optional))
            continue
        if f.default is not dataclasses.MISSING:
            default = yaml_value(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = yaml_value(f.default_factory())
        else:
            default = "required"
        rows.append(Row(key, type_name(tp), default, _cell(comments.get(f.name, ""))))
    head = " ".join(_sentence(part) for part in (_doc(cls), text) if part)
    if optional:
        head += " Off (`null`) unless set; setting any key below turns it on with the other keys' defaults."
    out = [Section(prefix.rstrip("."), cls, head, tuple(rows))]
    for inner, key, comment, is_optional in nested:
        out += sections(inner, key + ".", comment, is_optional)
    return out


def rows_of(all_sections: list[Section]) -> dict[str, Row]:
    return {row.key: row for section in all_sections for row in section.rows}


def generate() -> str:
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by scripts/config_reference.py from the config dataclasses; do not edit by hand.",
        "     Regenerate: .venv/bin/python scripts/config_reference.py > docs/config.md -->",
        "",
        "Every key of every CLI's config: its dotted name (what `--set KEY=VALUE` and the YAML presets in",
        "`configs/` take), its type, its default (the dataclass's; a preset overrides some) and the comment",
        "beside the field in the source. An unknown key or a value of the wrong type or range is a one-line",
        "error naming the key (exit 2). Lists are written `[a, b]` (`--set \"learner.lr_values=[0.1,0.01]\"`).",
        "Regenerate with `.venv/bin/python scripts/config_reference.py > docs/config.md`; `--check` (and",
        "`tests/test_config_reference.py`) fails while this file is out of date.",
        "",
    ]
    for cli, spec, how in ROOTS:
        cls = _root_class(spec)
        all_sections = sections(cls)
        module = spec.split(":")[0]
        lines += [f"## {cli}: `{module}.{cls.__name__}`", "", f"{how}. {len(rows_of(all_sections))} keys.", ""]
        for section in all_sections:
            if not section.rows:
                continue
            title = f"`{section.key}`" if section.key else "top-level keys"
            source = Path(inspect.getsourcefile(section.cls)).relative_to(ROOT)
            lines += [f"### {title} ({section.cls.__name__}, `{source}`)", ""]
            if section.text:
                lines += [section.text, ""]
            lines += ["| key | type | default | what |", "|---|---|---|---|"]
            lines += [row.line() for row in section.rows]
            lines.append("")
    return "\n".join(lines)


def parse_rows(text: str) -> dict[str, str]:
    """{"cli: key": its table line} of a docs/config.md text (the CLI from the `## cli: ...` heading above)."""
    out, cli = {}, ""
    for line in text.splitlines():
        if line.startswith("## "):
            cli = line[3:].split(":")[0]
        elif line.startswith("| `"):
            out[f"{cli}: {line[3:line.index('`', 3)]}"] = line
    return out


def check(doc_text: str, fresh: str) -> list[str]:
    """What is wrong with `doc_text` against the freshly generated `fresh`, one line per problem."""
    if doc_text == fresh:
        return []
    have, want = parse_rows(doc_text), parse_rows(fresh)
    problems = [f"{key}: missing from docs/config.md" for key in want if key not in have]
    problems += [f"{key}: in docs/config.md but no such config key" for key in have if key not in want]
    problems += [f"{key}: stale (type, default or comment changed)\n  docs:   {have[key]}\n  source: {want[key]}"
                 for key in want if key in have and have[key] != want[key]]
    if not problems:
        diff = difflib.unified_diff(doc_text.splitlines(), fresh.splitlines(), "docs/config.md", "generated",
                                    lineterm="", n=0)
        problems.append("docs/config.md differs outside the key lines:\n" + "\n".join(list(diff)[:20]))
    return problems


def undocumented() -> list[str]:
    """Keys whose field has no comment in the source."""
    return [row.key for _, spec, _ in ROOTS for row in rows_of(sections(_root_class(spec))).values()
            if row.text == NO_COMMENT]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare docs/config.md with the dataclasses; exit 1 naming the keys that differ")
    args = parser.parse_args(argv)
    fresh = generate() + "\n"
    if not args.check:
        sys.stdout.write(fresh)
        return 0
    missing_comments = undocumented()
    if missing_comments:
        print(f"note: {len(missing_comments)} field(s) without a comment in the source: "
              f"{', '.join(missing_comments)}", file=sys.stderr)
    problems = check(DOC.read_text() if DOC.exists() else "", fresh)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"docs/config.md is out of date ({len(problems)} problem(s)); regenerate: "
              ".venv/bin/python scripts/config_reference.py > docs/config.md", file=sys.stderr)
        return 1
    print(f"docs/config.md is up to date ({len(parse_rows(fresh))} keys)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
