"""Typed configs: nested frozen dataclasses <- YAML presets <- dotted command-line overrides.

    cfg = load(SelfPlayConfig, "configs/chess_cpu.yaml", ["learner.batch_size=128", "search.num_simulations=64"])

Unknown keys and values of the wrong type raise `ConfigError` naming the dotted key, so a CLI can
print one line instead of a traceback. `Literal` fields take only their listed values; a dataclass
calls `check_choices(self)` in `__post_init__` so a config built in code is checked the same way.

Older configs: every saved run config.yaml and network.yaml lists all of a dataclass's fields, so a
removed field stays readable. A dataclass names it in `RETIRED` ({field: Retired(old default)}): its
old default is read and dropped, any other value is one error line saying it was retired. A
dataclass may also define `upgrade_dict(data) -> data` (a classmethod) to rename older keys before
they are checked (`upgrade` applies both through a nested mapping without building the config).
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re
import types
import typing
from typing import Any, Iterable, Mapping, NamedTuple

import yaml

# 1e-12, 5E3: numbers YAML 1.1 leaves as strings (its floats need a dot in the mantissa)
_EXPONENT_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")
RETIRED_DOC = "docs/experiments/README.md#retired-options"  # why each retired option went


class ConfigError(ValueError):
    """A config key or value that does not fit its dataclass; the message names the dotted key."""


class Retired(NamedTuple):
    """A field that was removed: older configs still name it with its old default, which is read and
    dropped; any other value is refused. `instead`: what to set now, if anything."""

    default: Any
    instead: str = ""


def _same_value(value: Any, default: Any) -> bool:
    return value == default and isinstance(value, bool) == isinstance(default, bool)  # 1 == True, not here


def _upgrade_level(cls: type, data: dict, prefix: str) -> dict:
    """`data` (one level, for dataclass `cls`) with cls.upgrade_dict applied and retired keys dropped."""
    hook = getattr(cls, "upgrade_dict", None)
    if hook is not None:
        data = dict(hook(data))
    retired: Mapping[str, Retired] = getattr(cls, "RETIRED", {})
    for name in [n for n in data if n in retired]:
        value, (default, instead) = data.pop(name), retired[name]
        if not _same_value(value, default):
            key = f"{prefix}.{name}" if prefix else name
            raise ConfigError(f"{key} was retired ({RETIRED_DOC}): {instead or 'remove it'} "
                              f"(only its old default, {default!r}, is still read)")
    return data


def upgrade(cls: type, data: Mapping[str, Any] | None, prefix: str = "") -> dict:
    """A nested mapping for dataclass `cls` as the current fields name it (`upgrade_dict`, `RETIRED`, at
    every level); unknown keys are left for `from_dict` to report. ConfigError on a retired value."""
    data = _upgrade_level(cls, dict(data or {}), prefix)
    hints = typing.get_type_hints(cls)
    for name, value in data.items():
        if name in hints and dataclasses.is_dataclass(hints[name]) and isinstance(value, Mapping):
            data[name] = upgrade(hints[name], value, f"{prefix}.{name}" if prefix else name)
    return data


def _coerce(value: Any, tp: Any, key: str) -> Any:
    """Checks `value` against the annotation `tp` (converting int -> float and lists -> tuples)."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, key)
            except ConfigError as e:
                errors.append(e)
        if len(errors) == 1:  # Optional[X]: X's own error names the problem
            raise errors[0]
        raise ConfigError(f"{key}: {value!r} does not fit {tp}")
    if origin is typing.Literal:
        if value not in typing.get_args(tp):
            raise ConfigError(f"{key}: {value!r} is not one of {list(typing.get_args(tp))}")
        return value
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key}: expected a list, got {value!r}")
        args = typing.get_args(tp)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            items = [_coerce(v, args[0], f"{key}[{i}]") for i, v in enumerate(value)]
        elif origin is tuple and args:
            if len(args) != len(value):
                raise ConfigError(f"{key}: expected {len(args)} items, got {len(value)}")
            items = [_coerce(v, a, f"{key}[{i}]") for i, (v, a) in enumerate(zip(value, args))]
        else:
            inner = args[0] if args else Any
            items = [_coerce(v, inner, f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key}: expected a mapping, got {value!r}")
        return dict(value)
    if dataclasses.is_dataclass(tp):
        if dataclasses.is_dataclass(value) and isinstance(value, tp):
            return value
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key}: expected a mapping of {tp.__name__} fields, got {value!r}")
        return from_dict(tp, value, prefix=key)
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: expected true/false, got {value!r}")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and _EXPONENT_NUMBER.fullmatch(value.strip()):
            return float(value)  # YAML 1.1 reads 1e-12 (no dot in the mantissa) as a string
        raise ConfigError(f"{key}: expected a number, got {value!r}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: expected an integer, got {value!r}")
    if tp is str:
        if isinstance(value, str):
            return value
        raise ConfigError(f"{key}: expected a string, got {value!r}")
    if isinstance(tp, type) and not isinstance(value, tp):
        raise ConfigError(f"{key}: expected {tp.__name__}, got {value!r}")
    return value


@functools.lru_cache(maxsize=None)
def _choices(cls: type) -> tuple[tuple[str, tuple], ...]:
    """(field, allowed values) of every Literal (or Optional[Literal]) field of dataclass `cls`."""
    out = []
    for name, tp in typing.get_type_hints(cls).items():
        args = typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)
        for arg in args:
            if typing.get_origin(arg) is typing.Literal:
                out.append((name, typing.get_args(arg) + ((None,) if type(None) in args else ())))
    return tuple(out)


def check_choices(cfg: Any) -> None:
    """Raises ValueError naming the first Literal field of dataclass `cfg` whose value is not one
    of its choices (call it from __post_init__)."""
    for name, allowed in _choices(type(cfg)):
        value = getattr(cfg, name)
        if value not in allowed:
            raise ValueError(f"{name}: {value!r} is not one of {[a for a in allowed if a is not None]}")


def check_at_least(cfg: Any, minimum: float, *names: str, prefix: str = "") -> None:
    """Raises ValueError naming the first field of `names` (None skipped) below `minimum`."""
    for name in names:
        value = getattr(cfg, name)
        if value is not None and value < minimum:
            raise ValueError(f"{prefix}{name} must be >= {minimum:g}, got {value:g}")


def check_unit_interval(cfg: Any, *names: str, prefix: str = "") -> None:
    """Raises ValueError naming the first field of `names` outside [0, 1) (decays, momenta, shares)."""
    for name in names:
        value = getattr(cfg, name)
        if not 0.0 <= value < 1.0:
            raise ValueError(f"{prefix}{name} must be in [0, 1), got {value:g}")


def from_dict(cls: type, data: Mapping[str, Any] | None, prefix: str = "") -> Any:
    """Builds dataclass `cls` from a (nested) mapping; missing fields keep their defaults."""
    data = _upgrade_level(cls, dict(data or {}), prefix)
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - names)
    if unknown:
        where = f"{prefix}." if prefix else ""
        raise ConfigError(f"unknown config key '{where}{unknown[0]}' (valid: {', '.join(sorted(names))})")
    kwargs = {}
    for name, value in data.items():
        kwargs[name] = _coerce(value, hints[name], f"{prefix}.{name}" if prefix else name)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{prefix or cls.__name__}: {e}") from None


def to_dict(cfg: Any) -> Any:
    """Dataclass -> plain nested dict/list (YAML-safe)."""
    if dataclasses.is_dataclass(cfg):
        return {f.name: to_dict(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}
    if isinstance(cfg, (list, tuple)):
        return [to_dict(v) for v in cfg]
    if isinstance(cfg, dict):
        return {k: to_dict(v) for k, v in cfg.items()}
    return cfg


def parse_overrides(items: Iterable[str]) -> dict[str, Any]:
    """["a.b=1", "c=[1, 2]"] -> {"a": {"b": 1}, "c": [1, 2]}; values are parsed as YAML scalars."""
    tree: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"override '{item}' is not of the form key=value")
        key, raw = item.split("=", 1)
        key = key.strip()
        if not key or any(not part for part in key.split(".")):
            raise ConfigError(f"override '{item}' has an empty key")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        value = _expand_home(value)
        node = tree
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override '{item}' conflicts with another override")
        node[parts[-1]] = value
    return tree


def _expand_home(value: Any) -> Any:
    """"~/runs" -> "/home/me/runs" (in a list too): the shell leaves a `--set key=~/path` alone, since a
    dotted key is not a variable name, and a path under the home directory is what was meant."""
    if isinstance(value, str) and value.startswith("~/"):
        return os.path.expanduser(value)
    if isinstance(value, list):
        return [_expand_home(v) for v in value]
    return value


def _merge(base: dict, extra: Mapping) -> dict:
    out = dict(base)
    for k, v in extra.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def apply_overrides(cfg: Any, overrides: Iterable[str]) -> Any:
    """Returns a copy of dataclass `cfg` with dotted overrides applied and type-checked."""
    return from_dict(type(cfg), _merge(to_dict(cfg), parse_overrides(overrides)))


def load(cls: type, path: str | os.PathLike | None = None, overrides: Iterable[str] = (),
         extra: Mapping[str, Any] | None = None) -> Any:
    """Loads `cls` from a YAML preset (None: the dataclass defaults) plus dotted overrides;
    `extra` (a nested mapping, e.g. from a CLI's shortcut flags) goes between the two."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            with open(path) as f:
                data = yaml.safe_load(f) or {}
        except FileNotFoundError:
            raise ConfigError(f"config file not found: {path}") from None
        except yaml.YAMLError as e:
            raise ConfigError(f"config file {path} is not valid YAML: {e}") from None
        if not isinstance(data, Mapping):
            raise ConfigError(f"config file {path} must hold a mapping at the top level")
    try:
        return from_dict(cls, _merge(_merge(data, extra or {}), parse_overrides(overrides)))
    except ConfigError:
        if path is not None:  # the file alone fails too: name it (a run saved by another version, a typo)
            try:
                from_dict(cls, data)
            except ConfigError as in_file:
                raise ConfigError(f"{path}: {in_file}") from None
        raise
