"""The config's trail: which rooms a run's config passes through, and how often it comes back to one.

    .venv/bin/python scripts/config_trail.py            # one JSON object
    .venv/bin/python scripts/config_trail.py --trail    # the trail first, a (file, function) per line

Read with `ast` (nothing imported). A room is a top-level package of the repo (selfplay/, learner/, ...)
or a root module (selfplay.py). From `run` in selfplay/run.py the walk goes depth-first, calls in a body
in source order (line, column: an outer call before the calls in its arguments), into each callee the
config reaches, visiting each function once (a call to a visited function adds nothing; a callee's
config parameters are those its first call passed config to). In a function the config is:
  - its config parameters (the start's `cfg`), a local assigned one by plain assignment (`c =
    cfg.learner`, `cfg, d = self.cfg, self.run_dir`; flow-insensitive), and any attribute path from
    those (`cfg.learner.batch_size`);
  - in a method, `self.<a>...` where a method of the class visited earlier assigned `self.<a>` config.
A call follows the config when an argument (positional, keyword or starred) is config, or when its
receiver holds config: `self.m()` in a class that stored config on `self`, `x.m()` / `self.x.m()` where
`x` / `self.x` was assigned `Cls(<config>)`. Callees resolve through the module's imports (module-level
and the function's own), a package `__init__`'s re-exports and its `_LAZY` map, `pkg.mod.f` chains,
`Cls(...)` -> `Cls.__init__`, `Cls.m` / `self.m` / `super().m` / `cls(...)` through the class's project
bases. Nested defs and lambdas are walked as part of their function. Calls that follow the config but
cannot be resolved are skipped and listed: `unresolved` (a callee held in a variable, a factory's
result, `ray.remote(Cls).remote(cfg.x)`), `outside` (builtins, other libraries, a project class without
an `__init__` of its own, e.g. a dataclass: "Cls (no __init__)"). Calls on objects of unknown class
that pass no config are not seen.

Output: `trail` ("file:function" in visiting order), `files` (distinct), `rooms` (the trail's rooms,
consecutive repeats collapsed), `returns`: the entries of `rooms` whose room appears earlier in it,
i.e. the times the trail enters a room it had left for another, and `return_steps`: the function
entered at each return, "<- " the function whose call entered it. The flat count includes an
orchestrator's own calls from room to room; `loops` counts only the steps whose call path had left
their room for another before (A -> B -> A down one path: a room that calls back up).
"""
from __future__ import annotations

import argparse
import ast
import builtins
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Step:
    """One function on the trail."""
    file: str
    function: str
    room: str
    caller: str  # "file:function" of the call that entered it ("" for the start)
    chain: tuple[str, ...] = ()  # the rooms of the call path down to this step, consecutive repeats collapsed


@dataclass(frozen=True)
class Target:
    """What a name or call resolves to: kind is module, function (qual "f" or "Cls.m"), class or outside."""
    kind: str
    module: str
    qual: str = ""


@dataclass
class Trail:
    steps: list[Step] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)  # "file:line callee"
    outside: Counter = field(default_factory=Counter)  # callee -> calls

    def rooms(self) -> list[str]:
        return [r for i, r in enumerate(s.room for s in self.steps) if i == 0 or r != self.steps[i - 1].room]

    def return_steps(self) -> list[Step]:
        """The steps entering a room the trail had left for another."""
        left, out = set(), []
        for before, step in zip(self.steps, self.steps[1:]):
            if step.room != before.room:
                left.add(before.room)
                out += [step] if step.room in left else []
        return out

    def loop_steps(self) -> list[Step]:
        """The steps whose call path had already left their room for another: A -> B -> A down one path."""
        return [s for s in self.steps if s.room in s.chain[:-2]]

    def summary(self) -> dict:
        back, loops = self.return_steps(), self.loop_steps()
        return {"trail": [f"{s.file}:{s.function}" for s in self.steps], "files": len({s.file for s in self.steps}),
                "rooms": self.rooms(), "returns": len(back), "return_steps": [f"{s.file}:{s.function} <- {s.caller}"
                                                                             for s in back],
                "loops": len(loops), "loop_steps": [f"{s.file}:{s.function}: {' -> '.join(s.chain)}" for s in loops],
                "unresolved": self.unresolved, "outside": dict(self.outside.most_common())}


@dataclass
class _Scope:
    """What the walk knows inside one function: its config names and the config-built objects."""
    module: str
    cls: Target | None
    imports: dict[str, tuple]
    config: set[str]
    instances: dict[str, Target] = field(default_factory=dict)
    nested: set[str] = field(default_factory=set)
    chain: tuple[str, ...] = ()  # the rooms of the call path down to this function


def _imports(nodes) -> dict[str, tuple]:
    """local name -> ("module", m) for `import m` / ("from", m, name) for `from m import name`."""
    out = {}
    for node in (n for top in nodes for n in ast.walk(top)):
        if isinstance(node, ast.Import):
            out |= {a.asname or a.name.split(".")[0]: ("module", a.name if a.asname else a.name.split(".")[0])
                    for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out |= {a.asname or a.name: ("from", node.module, a.name) for a in node.names}
    return out


def _lazy(tree: ast.Module) -> dict[str, str]:
    """A face's `_LAZY = {name: module}`: names its `__getattr__` loads on first use."""
    return next((ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 and any(getattr(t, "id", "") == "_LAZY" for t in n.targets)), {})


class Walk:
    """The repo's modules (packages under the root, root modules) and the walk's state."""

    def __init__(self, root: Path):
        self.root, self.trail, self.seen = root, Trail(), set()
        self.trees: dict[str, ast.Module] = {}
        self.paths: dict[str, Path] = {}
        for path in sorted(root.glob("*.py")) + sorted(p for d in root.iterdir() if (d / "__init__.py").exists()
                                                       for p in d.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            self.paths[name], self.trees[name] = path, ast.parse(path.read_text(), str(path))
        self.defs = {m: {n.name: n for n in t.body if isinstance(n, (*FUNCS, ast.ClassDef))}
                     for m, t in self.trees.items()}
        self.module_imports = {m: _imports(n for n in t.body if not isinstance(n, (*FUNCS, ast.ClassDef)))
                               for m, t in self.trees.items()}
        self.config_attrs: dict[Target, set[str]] = {}  # class -> self attributes holding config
        self.attr_types: dict[Target, dict[str, Target]] = {}  # class -> self attribute -> class built with config

    def name(self, module: str, name: str, local: dict | None = None) -> Target | None:
        if module not in self.trees:
            return None
        if name in self.defs[module]:
            return Target("class" if isinstance(self.defs[module][name], ast.ClassDef) else "function", module, name)
        if binding := (local or {}).get(name) or self.module_imports[module].get(name):
            base = Target("module" if binding[1] in self.trees else "outside", binding[1])
            return base if binding[0] == "module" else self.attr(base, binding[2])
        if name in (lazy := _lazy(self.trees[module])):  # a face's name loaded on first use, or its module
            return Target("module", lazy[name]) if lazy[name].endswith("." + name) else self.name(lazy[name], name)
        return Target("outside", "builtins", name) if hasattr(builtins, name) else None

    def attr(self, base: Target, attr: str) -> Target | None:
        if base.kind == "outside":
            return Target("outside", base.module, f"{base.qual}.{attr}".lstrip("."))
        if base.kind == "module":
            sub = f"{base.module}.{attr}"
            return Target("module", sub) if sub in self.trees else self.name(base.module, attr)
        return self.method(base, attr) if base.kind == "class" else None

    def method(self, cls: Target, name: str) -> Target | None:
        """`name` in the class or, depth-first, its project bases."""
        node = self.defs[cls.module][cls.qual]
        if any(isinstance(n, FUNCS) and n.name == name for n in node.body):
            return Target("function", cls.module, f"{cls.qual}.{name}")
        for base in node.bases:
            b = self.expr(base, cls.module, {})
            if b and b.kind == "class" and (found := self.method(b, name)):
                return found
        return None

    def expr(self, node: ast.expr, module: str, local: dict) -> Target | None:
        if isinstance(node, ast.Name):
            return self.name(module, node.id, local)
        base = self.expr(node.value, module, local) if isinstance(node, ast.Attribute) else None
        return self.attr(base, node.attr) if base else None

    def node(self, t: Target) -> ast.AST:
        cls, _, fn = t.qual.rpartition(".")
        body = self.defs[t.module][cls].body if cls else self.defs[t.module].values()
        return next(n for n in body if isinstance(n, FUNCS) and n.name == fn)

    def is_config(self, node: ast.expr, s: _Scope) -> bool:
        node = node.value if isinstance(node, ast.Starred) else node
        path = []
        while isinstance(node, ast.Attribute):
            path, node = [node.attr] + path, node.value
        if not isinstance(node, ast.Name):
            return False
        if node.id == "self" and s.cls and path:
            return path[0] in self.config_attrs.get(s.cls, set())
        return node.id in s.config

    def passes(self, call: ast.Call, s: _Scope) -> bool:
        return any(self.is_config(a, s) for a in call.args + [k.value for k in call.keywords])

    def callee(self, func: ast.expr, s: _Scope) -> tuple[Target | None, bool, bool]:
        """(target, called on an instance, the receiver holds config)."""
        if isinstance(func, ast.Attribute):
            recv, holder = func.value, bool(s.cls and self.config_attrs.get(s.cls))
            if isinstance(recv, ast.Call) and getattr(recv.func, "id", "") == "super" and s.cls:
                bases = [self.expr(b, s.cls.module, {}) for b in self.defs[s.cls.module][s.cls.qual].bases]
                return next((m for b in bases if b and b.kind == "class" and (m := self.method(b, func.attr))),
                            None), True, holder
            if isinstance(recv, ast.Name) and recv.id == "self" and s.cls:
                return self.method(s.cls, func.attr), True, holder
            if isinstance(recv, ast.Name) and recv.id in s.instances:
                return self.method(s.instances[recv.id], func.attr), True, True
            if (isinstance(recv, ast.Attribute) and getattr(recv.value, "id", "") == "self"
                    and recv.attr in self.attr_types.get(s.cls, {})):
                return self.method(self.attr_types[s.cls][recv.attr], func.attr), True, True
        if isinstance(func, ast.Name) and func.id == "cls" and s.cls:  # in a classmethod: the class
            return s.cls, False, False
        if isinstance(func, ast.Name) and (func.id in s.nested or func.id in s.instances or func.id in s.config):
            return Target("nested", s.module), False, False  # its body is walked with ours, or a local's __call__
        return self.expr(func, s.module, s.imports), False, False

    def bind(self, fn: ast.AST, s: _Scope) -> None:
        """Config locals, config attributes of self and config-built objects, from plain assignments."""
        pairs = [(t, v) for a in (n for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value)
                 for t in (a.targets if isinstance(a, ast.Assign) else [a.target])
                 for t, v in (zip(t.elts, a.value.elts) if isinstance(t, ast.Tuple) and isinstance(a.value, ast.Tuple)
                              and len(t.elts) == len(a.value.elts) else [(t, a.value)])]
        for _ in range(3):  # a local bound from a local bound from config
            for target, value in pairs:
                is_self = isinstance(target, ast.Attribute) and getattr(target.value, "id", "") == "self" and s.cls
                built = self.expr(value.func, s.module, s.imports) if isinstance(value, ast.Call) else None
                if self.is_config(value, s):
                    if isinstance(target, ast.Name):
                        s.config.add(target.id)
                    elif is_self:
                        self.config_attrs.setdefault(s.cls, set()).add(target.attr)
                elif built and built.kind == "class" and self.passes(value, s):
                    if isinstance(target, ast.Name):
                        s.instances[target.id] = built
                    elif is_self:
                        self.attr_types.setdefault(s.cls, {})[target.attr] = built

    def visit(self, t: Target, config: set[str], caller: str = "", chain: tuple[str, ...] = ()) -> None:
        self.seen.add(t)
        fn, path = self.node(t), self.paths[t.module].relative_to(self.root)
        room = path.parts[0] if len(path.parts) > 1 else path.name
        chain = chain if chain and chain[-1] == room else chain + (room,)
        self.trail.steps.append(Step(str(path), t.qual, room, caller, chain))
        cls = Target("class", t.module, t.qual.rpartition(".")[0]) if "." in t.qual else None
        s = _Scope(t.module, cls, self.module_imports[t.module] | _imports(fn.body), set(config), chain=chain,
                   nested={n.name for n in ast.walk(fn) if isinstance(n, FUNCS) and n is not fn}
                   | {t.id for n in ast.walk(fn) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Lambda)
                      for t in n.targets if isinstance(t, ast.Name)})
        self.bind(fn, s)
        calls = sorted((n for stmt in fn.body for n in ast.walk(stmt) if isinstance(n, ast.Call)),
                       key=lambda n: (n.lineno, n.col_offset))
        for call in calls:
            self.follow(call, s, path, t.qual)

    def follow(self, call: ast.Call, s: _Scope, path: Path, function: str) -> None:
        target, on_instance, holder = self.callee(call.func, s)
        if not (holder or self.passes(call, s)) or (target and target.kind in ("nested", "module")):
            return
        if target and target.kind == "class":
            init = self.method(target, "__init__")
            target, on_instance = init or Target("outside", target.module, f"{target.qual} (no __init__)"), True
        if target is None:
            self.trail.unresolved.append(f"{path}:{call.lineno} {ast.unparse(call.func)[:60]}")
        elif target.kind == "outside":
            self.trail.outside[f"{target.module}.{target.qual}".removeprefix("builtins.")] += 1
        elif target not in self.seen:
            fn = self.node(target)
            kinds = {getattr(d, "id", "") for d in fn.decorator_list}
            params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
            params = params[1:] if "classmethod" in kinds or (on_instance and "staticmethod" not in kinds) else params
            config = {p for p, a in zip(params, call.args) if not isinstance(a, ast.Starred) and self.is_config(a, s)}
            config |= {k.arg for k in call.keywords if k.arg and self.is_config(k.value, s)}
            self.visit(target, config, f"{path}:{function}", s.chain)


def measure(root: Path = ROOT, start: str = "selfplay.run", function: str = "run", config: str = "cfg") -> Trail:
    walk = Walk(root)
    walk.visit(Target("function", start, function), {config})
    return walk.trail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trail", action="store_true", help="print the trail, one (file, function) per line")
    trail = measure()
    if parser.parse_args().trail:
        back = set(trail.return_steps())
        print("\n".join(f"{s.room:10} {s.file}: {s.function}" + ("   <- back" * (s in back)) for s in trail.steps))
    print(json.dumps(trail.summary(), indent=1))


if __name__ == "__main__":
    main()
