"""The house's layout (../shared/DESIGN.md), read from the source with `ast` (nothing imported): no
import circle between the project's modules, counting the imports inside functions too (a lazy
import hides a circle from Python, not from a reader), and no room reaching into a room the design
keeps it apart from."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("actors", "arena", "bench", "configs", "distill", "games", "learner", "models", "replay", "runtime",
            "search", "selfplay")
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


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `path` imports anywhere in its body (a package's import of its own
    submodules through `from package import x` counts as importing package.x when that exists)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
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


def test_rooms_import_only_what_the_design_lets_them():
    crossings = [f"{module} imports {dep}" for module, deps in _graph().items() for dep in sorted(deps)
                 if dep.split(".")[0] in FORBIDDEN.get(module.split(".")[0], ()) and dep != "selfplay.config"]
    assert not crossings, crossings
