"""The house's layout (../shared/DESIGN.md), read from the source with `ast` (nothing imported): no
import circle between the project's modules, counting the imports inside functions too (a lazy
import hides a circle from Python, not from a reader) and the names a room's face loads on first use
(its `_LAZY`), no room reaching into a room the design keeps it apart from, and every room reaching
another only through its face: the names its `__init__` lists in `__all__`."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from by_path import load_module

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("actors", "arena", "bench", "configs", "distill", "games", "learner", "models", "replay", "runtime",
            "search", "selfplay")
ROOMS = tuple(p for p in PACKAGES if p != "bench")  # bench/ sits outside, as scripts/, tests/ and the CLIs do
RUN_ROOMS = {"actors", "replay", "learner", "selfplay"}
# room -> rooms it must not import. games/, models/, search/ are pure JAX/numpy libraries; learner/
# knows networks and the train step, not actors or replay; only selfplay/ knows every room of the run
# (others may read its typed config, selfplay.config, as distill's warm start does); arena/ plays
# any player without the run's machinery; runtime/ (the process's environment: caches, cores, signals,
# GPU memory, the data directory) sits below every room and imports none.
FORBIDDEN = {
    "games": RUN_ROOMS | {"models", "search", "arena", "distill"},
    "models": RUN_ROOMS | {"search", "arena", "distill"},
    "search": RUN_ROOMS | {"arena", "distill"},
    "actors": {"learner", "selfplay", "arena", "distill"},
    "replay": {"actors", "learner", "selfplay", "arena", "distill"},
    "learner": {"actors", "replay", "selfplay", "arena", "distill"},
    "arena": RUN_ROOMS | {"distill"},
    "distill": {"actors", "selfplay"},
    "runtime": set(PACKAGES) - {"runtime"},
}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _lazy(tree: ast.Module) -> dict[str, str]:
    """A face's `_LAZY = {name: module}`: the names its `__getattr__` imports from `module` on first
    use (the module itself where `name` is its last part)."""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets)
                and isinstance(node.value, ast.Dict)):
            return {ast.literal_eval(k): ast.literal_eval(v) for k, v in zip(node.value.keys, node.value.values)}
    return {}


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `path` imports anywhere in its body (a package's import of its own
    submodules through `from package import x` counts as importing package.x when that exists), and
    the modules of its `_LAZY` names."""
    tree = ast.parse(path.read_text(), str(path))
    out = {m for m in _lazy(tree).values() if m in modules}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                     for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:  # a.b.c where only a.b is a module
                name = name.rpartition(".")[0]
            if name:
                out.add(name)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {m: _imports(p, modules) - {m} for m, p in modules.items()}
    for m in graph:  # a package's __init__ re-exporting its modules is not a circle with them
        graph[m] = {d for d in graph[m] if not (m.startswith(d + ".") and "." not in m[len(d) + 1:])}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state and (found := visit(d)):
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_no_import_circles():
    cycle = _cycle(_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


MAX_MODULE_LINES = 350  # a module a reader takes in at one sitting; past it, it holds two things


def test_no_module_is_over_the_line_limit():
    """Every Python file of the project (rooms, bench/, scripts/, tests/, the CLIs); hidden folders
    (.venv, caches) and what runs write aside."""
    def ours(path: Path) -> bool:
        parts = path.relative_to(ROOT).parts
        return not any(p.startswith(".") or p in ("runs", "build", "dist") for p in parts)
    files = [p for p in ROOT.rglob("*.py") if ours(p)]
    assert len(files) > 100  # the walk found the project
    long = {str(p.relative_to(ROOT)): n for p in files if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split each by what it holds): {long}"


def test_rooms_import_only_what_the_design_lets_them():
    # any room may read the run's typed config (distill's warm start does): the one name of selfplay's face
    assert _face("selfplay")[:2] == (["SelfPlayConfig"], {"SelfPlayConfig": "selfplay.config"}), \
        "selfplay's face is its config alone: the rooms the design keeps apart from the run import it"
    open_to_all = {"selfplay", "selfplay.config"}
    crossings = [f"{module} imports {dep}" for module, deps in _graph().items() for dep in sorted(deps)
                 if dep.split(".")[0] in FORBIDDEN.get(module.split(".")[0], ()) and dep not in open_to_all]
    assert not crossings, crossings


def _face(room: str) -> tuple[list[str] | None, dict[str, str], set[str]]:
    """A room's `__all__` (None without one), its `_LAZY` and the names its `__init__` binds."""
    tree = ast.parse((ROOT / room / "__init__.py").read_text())
    names, bound = None, set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    bound.add(target.id)
                    if target.id == "__all__":
                        names = list(ast.literal_eval(node.value))
    return names, _lazy(tree), bound


def _defines(module: str, name: str, modules: dict[str, Path]) -> bool:
    """Whether `module` is `<package>.<name>` or binds `name` at its top level."""
    if module.rpartition(".")[2] == name:
        return module in modules
    if module not in modules:
        return False
    for node in ast.parse(modules[module].read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name) == name for a in node.names):
            return True
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False


def test_every_room_has_a_face_whose_names_exist():
    modules = _modules()
    problems = []
    for room in ROOMS:
        names, lazy, bound = _face(room)
        if names is None:
            problems.append(f"{room}/__init__.py: no __all__ (the names other rooms may use)")
            continue
        for name in names:
            if name in lazy:
                if not _defines(lazy[name], name, modules):
                    problems.append(f"{room}/__init__.py: _LAZY's {name!r} is not in {lazy[name]}")
            elif name not in bound and f"{room}.{name}" not in modules:
                problems.append(f"{room}/__init__.py: __all__ names {name!r}, which it neither binds, loads "
                                "lazily (_LAZY) nor has as a submodule")
        problems += [f"{room}/__init__.py: _LAZY's {name!r} is not in __all__" for name in lazy if name not in names]
    assert not problems, "\n".join(problems)


def _crossings(path: Path, room: str, faces: dict[str, list[str]]) -> list[str]:
    """Each import in `path` (a module of `room`) of another room that does not go through its face."""
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    out = []
    tree = ast.parse(path.read_text(), str(path))
    aliases = {}  # local name -> room, for `import games` then games.make
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                other = a.name.split(".")[0]
                if other in faces and other != room:
                    if "." in a.name:
                        out.append(f"{where}:{node.lineno}: `import {a.name}` reaches into {other}/; "
                                   f"use `from {other} import <name>` (its face: {other}/__init__.py's __all__)")
                    else:
                        aliases[a.asname or a.name] = other
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            other = node.module.split(".")[0]
            if other not in faces or other == room:
                continue
            for a in node.names:
                if node.module != other:
                    face = f"`from {other} import {a.name}`" + (
                        "" if a.name in faces[other] else f", once {other}/__init__.py's __all__ (its face) names it")
                    out.append(f"{where}:{node.lineno}: `from {node.module} import {a.name}` reaches into "
                               f"{other}/; use {face}")
                elif a.name not in faces[other]:
                    out.append(f"{where}:{node.lineno}: `from {other} import {a.name}`: {a.name!r} is not in "
                               f"{other}/__init__.py's __all__ (its face); add it there or use a name it lists")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr not in faces[aliases[node.value.id]]):
            other = aliases[node.value.id]
            out.append(f"{where}:{node.lineno}: `{node.value.id}.{node.attr}`: {node.attr!r} is not in "
                       f"{other}/__init__.py's __all__ (its face); add it there or use a name it lists")
    return sorted(out, key=lambda line: int(line.split(":")[1]))


def test_rooms_reach_each_other_only_through_their_faces():
    faces = {room: _face(room)[0] or [] for room in ROOMS}
    found = [c for room in ROOMS for path in sorted((ROOT / room).rglob("*.py")) for c in _crossings(path, room, faces)]
    assert not found, "imports between rooms go through the room's package:\n" + "\n".join(found)


def test_the_face_check_finds_a_reach_into_a_room(tmp_path):
    path = tmp_path / "x.py"
    path.write_text("import games\nfrom games.game import make\nfrom games import make, nope\nimport games.packing\n"
                    "games.make('chess'), games.zzz\n")
    found = _crossings(path, "arena", {"games": ["make"], "arena": []})
    assert [line.split(": ", 1)[0].rsplit(":", 1)[1] for line in found] == ["2", "3", "4", "5"], found
    assert "use `from games import make`" in found[0] and "'zzz'" in found[-1]


def _config_trail():
    """scripts/config_trail.py (scripts/ is no package)."""
    return load_module(ROOT / "scripts" / "config_trail.py", "config_trail")


def test_no_call_path_of_the_run_returns_to_a_room_it_left():
    # the run's config goes down the floors: no call path goes from a room to another and back
    # (the flat trail's `returns`, run's own calls from room to room included, is held at the design's
    # bound of 8, with the local learner's construction in sight of the walk since make_learner names its class)
    trail = _config_trail().measure()
    assert (trail.steps[0].file, trail.steps[0].function) == ("selfplay/run.py", "run")
    assert len({s.file for s in trail.steps}) > 5 and trail.summary()["returns"] == len(trail.return_steps())
    assert trail.summary()["returns"] <= 8, trail.return_steps()
    assert trail.summary()["loop_steps"] == []


def test_the_config_trail_on_a_small_repo(tmp_path):
    files = {
        "a/__init__.py": "import importlib\n_LAZY = {'helper': 'a.tools'}\n__all__ = ['helper']\n",
        "a/tools.py": "def helper(x):\n    return x\n\n\ndef deep(y):\n    pass\n\n\ndef finish(cfg):\n    return cfg\n",
        "a/run.py": ("import b\nfrom a import helper, tools\nfrom c import Engine\n\n\n"
                     "def run(cfg):\n"
                     "    helper(cfg.x)\n"  # through a's _LAZY face
                     "    b.prepare(cfg)\n"  # through b's re-export
                     "    eng = Engine(cfg.engine)\n"
                     "    eng.go()\n"  # no config passed, but eng was built with it
                     "    tools.finish(cfg)\n"  # a submodule named by `from a import tools`
                     "    print(cfg)\n"  # outside
                     "    f = pick()\n    f(cfg)\n"  # unresolved
                     "    b.prepare(0)\n"),  # no config: not followed (and visited already)
        "b/__init__.py": "from b.prep import late, prepare\n__all__ = ['late', 'prepare']\n",
        "b/prep.py": ("def prepare(cfg):\n    from a.tools import helper\n    helper(cfg)\n    y = cfg.y\n"
                      "    _inner(y)\n    _unused(1)\n\n\ndef _inner(y):\n    from a.tools import deep\n    deep(y)\n\n\n"
                      "def _unused(n):\n    pass\n\n\ndef late(e):\n    pass\n"),
        "c.py": ("import b\n\n\nclass Engine:\n    def __init__(self, ecfg):\n        self.ecfg = ecfg\n\n"
                 "    def go(self):\n        self._step()\n        b.late(self.ecfg)\n\n"
                 "    def _step(self):\n        pass\n"),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    trail = _config_trail().measure(tmp_path, "a.run", "run")
    assert [f"{s.file}:{s.function}" for s in trail.steps] == [
        "a/run.py:run", "a/tools.py:helper", "b/prep.py:prepare", "b/prep.py:_inner", "a/tools.py:deep",
        "c.py:Engine.__init__",
        "c.py:Engine.go", "c.py:Engine._step", "b/prep.py:late", "a/tools.py:finish"]
    assert trail.rooms() == ["a", "b", "a", "c.py", "b", "a"]
    summary = trail.summary()
    assert (summary["returns"], summary["files"], summary["loops"]) == (3, 4, 1)
    assert summary["return_steps"] == ["a/tools.py:deep <- b/prep.py:_inner", "b/prep.py:late <- c.py:Engine.go",
                                       "a/tools.py:finish <- a/run.py:run"]
    assert summary["loop_steps"] == ["a/tools.py:deep: a -> b -> a"]
    assert summary["unresolved"] == ["a/run.py:14 f"] and summary["outside"] == {"print": 1}


RESIDUE = re.compile(r"[Ii]ssue [0-9]+|today['’]s code")  # spelt so that this file holds no match
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".sh", ".txt", ".cfg", ""}


def _residue_lines(root: Path) -> list[str]:
    """'path:line' of each line matching RESIDUE (an issue number, the code "of today") in the project's
    text files, outside the dated experiment records (which name the issue they measured for) and the
    files git ignores."""
    skip = {".git", ".venv", ".gpu_wheels", "runs", "node_modules", "__pycache__", ".pytest_cache", ".ruff_cache"}
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if (any(part in skip or part.startswith(".") and part not in (".ci",) for part in rel.parts[:-1])
                or not path.is_file() or path.suffix not in TEXT_SUFFIXES or rel.parts[:2] == ("docs", "experiments")):
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        found += [f"{rel}:{i}" for i, line in enumerate(text.splitlines(), 1) if RESIDUE.search(line)]
    return found


def test_no_lab_residue_outside_the_experiment_records():
    # code and user docs speak of the project as it is: no issue numbers, no code "of today" (name a commit)
    assert _residue_lines(ROOT) == []


def test_the_residue_check_finds_an_issue_number(tmp_path):
    (tmp_path / "docs" / "experiments").mkdir(parents=True)
    issue, today = "issue", "today's"  # apart, so that `git grep` finds no residue in this file either
    (tmp_path / "docs" / "experiments" / "2026-01-01-x.md").write_text(f"for {issue} 3\n")  # a record may
    (tmp_path / "bench.py").write_text(f"x = 1\n# as {issue} 12 asked\n")
    (tmp_path / "guide.md").write_text(f"measured on {today} code\n")
    assert _residue_lines(tmp_path) == ["bench.py:2", "guide.md:1"]
