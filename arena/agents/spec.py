"""Agent spec strings: `kind:key=value,key=value` names a player on the command line.

    random                              uniformly random legal moves
    stockfish:skill=0,nodes=1000        Stockfish (or movetime=MS, depth=D; path=BINARY)
    uci:cmd="/path/engine --flag",movetime=100      any UCI engine
    mcts:net=runs/x/network,sims=800    network + MCTS; any SearchConfig field is a key too
                                        (policy=gumbel, q_transform=min_max, pb_c_init=2, ...)
    policy:net=runs/x/network           network prior only (argmax), no search
    av:net=DIR / sv:net=DIR / bc:net=DIR        searchless students (distill/)

`net=` is a network directory (models/network_dir.py; `ckpt=` is an old alias). For `mcts`, the
search starts from the SearchConfig the network directory records (self-play writes it), played
greedily without root noise; spec keys override any field (`sims` is `num_simulations`).
Values may be double-quoted to hold commas or '='. Every agent takes `name=` (the player's
name in PGN and tables). Errors are `SpecError` (a ValueError) naming the spec and the key.
"""
from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any, Callable

from arena.agents.agent import Agent


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


def _non_negative(tp):
    def parse(text: str):
        value = tp(text)
        if value < 0:
            raise ValueError("must be >= 0")
        return value
    return parse


def _bool(text: str) -> bool:
    value = {"true": True, "yes": True, "on": True, "1": True,
             "false": False, "no": False, "off": False, "0": False}.get(text.strip().lower())
    if value is None:
        raise ValueError("must be true or false")
    return value


def _search_field(name: str) -> Callable[[str], Any]:
    """Parses `text` as the SearchConfig field `name` (YAML scalar, checked by SearchConfig)."""
    def parse(text: str):
        from configs import apply_overrides
        from search import SearchConfig
        return getattr(apply_overrides(SearchConfig(), [f"{name}={text}"]), name)
    return parse


@functools.cache
def search_keys() -> dict[str, Callable[[str], Any]]:
    """Every SearchConfig field as an mcts spec key (imports search/, so JAX)."""
    from search import SearchConfig
    return {f.name: _search_field(f.name) for f in dataclasses.fields(SearchConfig) if f.init}


_STUDENT = {"net": str, "temperature": _non_negative(float), "temperature_plies": _non_negative(int),
            "repetition_draw": _bool, "repetition_count": _in_range(2, 3), "rules": _bool,
            "seed": int}

# kind -> {key: parser}; keys not listed are errors. mcts also takes search_keys().
_KEYS: dict[str, dict[str, Callable[[str], Any]]] = {
    "random": {"seed": int},
    "stockfish": {"skill": _in_range(0, 20), "nodes": _positive(int), "movetime": _positive(int),
                  "depth": _positive(int), "threads": _positive(int), "hash": _positive(int),
                  "path": str},
    "uci": {"cmd": str, "nodes": _positive(int), "movetime": _positive(int),
            "depth": _positive(int)},
    # temperature: 0 plays the most visited move; > 0 samples visits ** (1 / temperature)
    "mcts": {"net": str, "temperature": _non_negative(float), "seed": int},
    "policy": {"net": str, "temperature": _non_negative(float), "seed": int},
    "av": _STUDENT,
    "sv": _STUDENT,
    "bc": _STUDENT,
}
_NETWORK_KINDS = ("mcts", "policy", "av", "sv", "bc")  # kinds whose `net=` is a network directory
_ALIASES = {kind: {"ckpt": "net"} for kind in _NETWORK_KINDS}  # written key -> the key it means
_ALIASES["mcts"]["sims"] = "num_simulations"
_REQUIRED = {"uci": ("cmd",), **{kind: ("net",) for kind in _NETWORK_KINDS}}


def _keys(kind: str) -> dict[str, Callable[[str], Any]]:
    return {**search_keys(), **_KEYS[kind]} if kind == "mcts" else _KEYS[kind]


@dataclasses.dataclass(frozen=True)
class AgentSpec:
    """A parsed spec: the agent kind, its typed options and the display name."""

    kind: str  # one of random, stockfish, uci, mcts, policy, av, sv, bc
    options: tuple[tuple[str, Any], ...]  # (key, typed value) pairs in spec order, aliases resolved
    text: str  # the spec as written, for messages and default names

    def get(self, key: str, default: Any = None) -> Any:
        key = _ALIASES.get(self.kind, {}).get(key, key)
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
    aliases = _ALIASES.get(kind, {})
    options = []
    seen = set()
    for written, raw in _split_options(body, text):
        key = aliases.get(written, written)
        if key in seen:
            raise SpecError(f"agent spec '{text}': '{key}' given twice")
        seen.add(key)
        if key == "name":
            options.append((key, raw))
            continue
        parse = _KEYS[kind].get(key)
        if parse is None and kind == "mcts":
            parse = search_keys().get(key)
        if parse is None:
            known = sorted([*_keys(kind), *aliases, "name"])
            raise SpecError(f"agent spec '{text}': unknown key '{written}' for {kind} "
                            f"(known: {', '.join(known)})")
        try:
            options.append((key, parse(raw)))
        except ValueError as e:
            raise SpecError(f"agent spec '{text}': bad value {raw!r} for '{written}': {e}") from None
    for key in _REQUIRED.get(kind, ()):
        if key not in seen:
            raise SpecError(f"agent spec '{text}': {kind} needs '{key}='")
    return AgentSpec(kind, tuple(options), text)


def _check_network(spec: AgentSpec) -> str:
    path = spec.get("net")
    if not os.path.exists(path):
        raise FileNotFoundError(f"agent spec '{spec.text}': network directory '{path}' not found")
    return path


def make_agent(spec: str | AgentSpec) -> Agent:
    """Builds the agent a spec names. Missing network directories/engines raise FileNotFoundError."""
    if isinstance(spec, str):
        spec = parse_spec(spec)
    if spec.kind == "random":
        from arena.agents.random import RandomAgent
        return RandomAgent(seed=spec.get("seed"), name=spec.name)
    if spec.kind in ("stockfish", "uci"):
        from arena.agents.engine import EngineAgent
        return EngineAgent.from_spec(spec)
    _check_network(spec)
    if spec.kind in ("mcts", "policy"):
        from arena.agents.network import make_network_agent
        return make_network_agent(spec)
    from arena.agents.student import make_student_agent
    return make_student_agent(spec)


def check_agent(spec: str | AgentSpec) -> AgentSpec:
    """Validates a spec without starting the agent: parse, network directory and engine existence."""
    if isinstance(spec, str):
        spec = parse_spec(spec)
    if spec.kind in _NETWORK_KINDS:
        _check_network(spec)
    if spec.kind == "stockfish":
        from runtime import find_stockfish
        find_stockfish(spec.get("path"))
    if spec.kind == "uci":
        import shlex
        import shutil
        command = shlex.split(spec.get("cmd"))
        if not command or (shutil.which(command[0]) is None and not os.path.isfile(command[0])):
            raise FileNotFoundError(f"agent spec '{spec.text}': engine "
                                    f"'{command[0] if command else ''}' not found")
    return spec
