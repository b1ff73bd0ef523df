"""Agent spec strings: `kind:key=value,key=value` names a player on the command line.

    random                              uniformly random legal moves
    stockfish:skill=0,nodes=1000        Stockfish (or movetime=MS, depth=D; path=BINARY)
    uci:cmd="/path/engine --flag",movetime=100      any UCI engine
    mcts:ckpt=runs/x/ckpt,sims=800      network + MCTS
    policy:ckpt=runs/x/ckpt             network prior only (argmax), no search
    av:ckpt=PATH / sv:ckpt=PATH / bc:ckpt=PATH      searchless students (distill/)

Values may be double-quoted to hold commas or '='. Every agent takes `name=` (the player's
name in PGN and tables). Errors are `SpecError` (a ValueError) naming the spec and the key.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable

from arena.agent import Agent


class SpecError(ValueError):
    """A spec string that names no known agent or has a bad key or value."""


def _positive(tp):
    def parse(text: str):
        value = tp(text)
        if value <= 0:
            raise ValueError("must be positive")
        return value
    return parse


def _in_range(lo: int, hi: int):
    def parse(text: str):
        value = int(text)
        if not lo <= value <= hi:
            raise ValueError(f"must be in {lo}..{hi}")
        return value
    return parse


def _non_negative_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise ValueError("must be >= 0")
    return value


# kind -> {key: parser}; keys not listed are errors.
_KEYS: dict[str, dict[str, Callable[[str], Any]]] = {
    "random": {"seed": int},
    "stockfish": {"skill": _in_range(0, 20), "nodes": _positive(int), "movetime": _positive(int),
                  "depth": _positive(int), "threads": _positive(int), "hash": _positive(int),
                  "path": str},
    "uci": {"cmd": str, "nodes": _positive(int), "movetime": _positive(int),
            "depth": _positive(int)},
    "mcts": {"ckpt": str, "sims": _positive(int), "temperature": _non_negative_float,
             "seed": int},
    "policy": {"ckpt": str, "temperature": _non_negative_float, "seed": int},
    "av": {"ckpt": str},
    "sv": {"ckpt": str},
    "bc": {"ckpt": str},
}
_REQUIRED = {"uci": ("cmd",), "mcts": ("ckpt",), "policy": ("ckpt",), "av": ("ckpt",),
             "sv": ("ckpt",), "bc": ("ckpt",)}


@dataclasses.dataclass(frozen=True)
class AgentSpec:
    """A parsed spec: the agent kind, its typed options and the display name."""

    kind: str  # one of random, stockfish, uci, mcts, policy, av, sv, bc
    options: tuple[tuple[str, Any], ...]  # (key, typed value) pairs in spec order
    text: str  # the spec as written, for messages and default names

    def get(self, key: str, default: Any = None) -> Any:
        return dict(self.options).get(key, default)

    @property
    def name(self) -> str:
        return self.get("name") or self.text


def _split_options(body: str, text: str) -> list[tuple[str, str]]:
    """'a=1,b="x,y"' -> [("a", "1"), ("b", "x,y")]; quotes may hold commas and '='."""
    pairs, key, buf, quoted, in_value, i = [], None, [], False, False, 0
    while i < len(body):
        ch = body[i]
        if quoted:
            if ch == "\\" and i + 1 < len(body) and body[i + 1] in '"\\':
                buf.append(body[i + 1])
                i += 1
            elif ch == '"':
                quoted = False
            else:
                buf.append(ch)
        elif ch == '"' and in_value:
            quoted = True
        elif ch == "=" and not in_value:
            key, buf, in_value = "".join(buf).strip(), [], True
        elif ch == ",":
            if not in_value:
                raise SpecError(f"agent spec '{text}': '{''.join(buf)}' is not key=value")
            pairs.append((key, "".join(buf)))
            key, buf, in_value = None, [], False
        else:
            buf.append(ch)
        i += 1
    if quoted:
        raise SpecError(f"agent spec '{text}': unterminated quote")
    if in_value:
        pairs.append((key, "".join(buf)))
    elif "".join(buf).strip():
        raise SpecError(f"agent spec '{text}': '{''.join(buf)}' is not key=value")
    return pairs


def parse_spec(text: str) -> AgentSpec:
    """'stockfish:skill=0,nodes=100' -> AgentSpec; raises SpecError naming what is wrong."""
    text = text.strip()
    kind, _, body = text.partition(":")
    kind = kind.strip().lower()
    if kind not in _KEYS:
        raise SpecError(f"agent spec '{text}': unknown agent '{kind}' "
                        f"(known: {', '.join(_KEYS)})")
    keys = _KEYS[kind]
    options = []
    seen = set()
    for key, raw in _split_options(body, text):
        if key in seen:
            raise SpecError(f"agent spec '{text}': '{key}' given twice")
        seen.add(key)
        if key == "name":
            options.append((key, raw))
            continue
        if key not in keys:
            raise SpecError(f"agent spec '{text}': unknown key '{key}' for {kind} "
                            f"(known: {', '.join(sorted([*keys, 'name']))})")
        try:
            options.append((key, keys[key](raw)))
        except ValueError as e:
            raise SpecError(f"agent spec '{text}': bad value {raw!r} for '{key}': {e}") from None
    for key in _REQUIRED.get(kind, ()):
        if key not in seen:
            raise SpecError(f"agent spec '{text}': {kind} needs '{key}='")
    return AgentSpec(kind, tuple(options), text)


def _check_checkpoint(spec: AgentSpec) -> str:
    path = spec.get("ckpt")
    if not os.path.exists(path):
        raise FileNotFoundError(f"agent spec '{spec.text}': checkpoint '{path}' not found")
    return path


def make_agent(spec: str | AgentSpec) -> Agent:
    """Builds the agent a spec names. Missing checkpoints/engines raise FileNotFoundError."""
    if isinstance(spec, str):
        spec = parse_spec(spec)
    if spec.kind == "random":
        from arena.random_agent import RandomAgent
        return RandomAgent(seed=spec.get("seed"), name=spec.name)
    if spec.kind in ("stockfish", "uci"):
        from arena.engine_agent import EngineAgent
        return EngineAgent.from_spec(spec)
    _check_checkpoint(spec)
    if spec.kind in ("mcts", "policy"):
        from arena.network_agents import make_network_agent
        return make_network_agent(spec)
    from arena.searchless_agents import make_searchless_agent
    return make_searchless_agent(spec)


def check_agent(spec: str | AgentSpec) -> AgentSpec:
    """Validates a spec without starting the agent: parse, checkpoint and engine existence."""
    if isinstance(spec, str):
        spec = parse_spec(spec)
    if spec.get("ckpt") is not None:
        _check_checkpoint(spec)
    if spec.kind == "stockfish":
        from arena.engine_agent import find_stockfish
        find_stockfish(spec.get("path"))
    if spec.kind == "uci":
        import shlex
        import shutil
        command = shlex.split(spec.get("cmd"))
        if not command or (shutil.which(command[0]) is None and not os.path.isfile(command[0])):
            raise FileNotFoundError(f"agent spec '{spec.text}': engine "
                                    f"'{command[0] if command else ''}' not found")
    return spec
