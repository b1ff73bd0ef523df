"""A network directory: a trained network without pickle, what arena/, match.py, uci.py and
`init.network` load (a run's training state is learner/checkpoint.py's, kept apart). It holds

    network.yaml     the NetworkConfig, the game (if it plays on pgx observations), byte count and
                     sha256 of the parameters, free-form metadata
    params.msgpack   the flax variables (params, batch_stats), serialised by flax.serialization

    save("runs/a/net_001000", cfg, variables, game="chess")
    net_dir = load("runs/a/net_001000")   # NetworkDir(config, variables, game, metadata)
    net = net_dir.module()                 # the flax module the variables belong to

A missing directory or file raises FileNotFoundError; a truncated or altered parameter file, a config
that does not parse, or parameters whose tree or shapes do not fit the stored config raise ValueError
naming the file and the problem.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

import flax.serialization
import flax.traverse_util
import jax
import jax.numpy as jnp
import numpy as np
import yaml

from configs import ConfigError, from_dict, to_dict
from models.network import NetworkConfig, make_network, make_student, upgrade_network_dict

CONFIG_FILE = "network.yaml"
PARAMS_FILE = "params.msgpack"
FORMAT = "zerochess-network/1"
_REPAIR = ("copy the network directory again from where it was made (a self-play run rewrites "
           "runs/<name>/network/ at every checkpoint)")


class NetworkDir(NamedTuple):
    config: NetworkConfig
    variables: Any  # nested dict of numpy arrays ({"params": ..., "batch_stats": ...})
    game: Optional[str]  # pgx game the network reads observations of; None for native-input students
    metadata: dict

    def module(self):
        """The flax module these variables belong to."""
        return build_module(self.config, self.game)


def build_module(cfg: NetworkConfig, game: Optional[str]):
    if game is None:
        return make_student(cfg)
    import games
    return make_network(cfg, games.make(game).spec)


def _example_input(cfg: NetworkConfig, game: Optional[str]) -> jax.ShapeDtypeStruct:
    if game is not None:
        import games
        return jax.ShapeDtypeStruct((1, *games.make(game).spec.observation_shape), jnp.float32)
    if cfg.family == "searchless":
        return jax.ShapeDtypeStruct((1, cfg.searchless.input_length), jnp.int32)
    if cfg.family == "chessformer":
        return jax.ShapeDtypeStruct((1, 64, cfg.chessformer.input_features), jnp.float32)
    raise ValueError("a resnet checkpoint needs the game it plays (save(..., game=...))")


def expected_shapes(cfg: NetworkConfig, game: Optional[str]) -> Any:
    """Variable tree of ShapeDtypeStructs the config builds (no memory allocated)."""
    module = build_module(cfg, game)
    example = _example_input(cfg, game)
    kwargs = {"return_pairs": True} if cfg.family == "chessformer" and game is None else {}
    return jax.eval_shape(lambda x: module.init(jax.random.PRNGKey(0), x, **kwargs), example)


def _flat(tree) -> dict[str, Any]:
    return {"/".join(str(getattr(k, "key", k)) for k in path): leaf
            for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]}


def _check_fits(variables, cfg: NetworkConfig, game: Optional[str], where: Path) -> None:
    want, got = _flat(expected_shapes(cfg, game)), _flat(variables)
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    if missing or extra:
        detail = f"missing {missing[0]}" if missing else f"unexpected {extra[0]}"
        raise ValueError(f"{where}: parameters do not fit the stored {cfg.family} config ({detail}; "
                         f"{len(missing)} missing, {len(extra)} unexpected)")
    for name, spec in want.items():
        if tuple(np.shape(got[name])) != tuple(spec.shape):
            raise ValueError(f"{where}: parameter {name} has shape {tuple(np.shape(got[name]))}, "
                             f"the stored config needs {tuple(spec.shape)}")


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def save(directory: str | os.PathLike, cfg: NetworkConfig, variables: Any, game: Optional[str] = None,
         metadata: Optional[dict] = None) -> Path:
    """Writes `variables` (as made by the module for cfg; game=None for students on their native
    input, else the pgx game it was built for by make_network) into `directory`. Returns the path."""
    directory = Path(directory)
    variables = jax.device_get(flax.core.unfreeze(variables))
    _check_fits(variables, cfg, game, directory)
    directory.mkdir(parents=True, exist_ok=True)
    payload = flax.serialization.msgpack_serialize(variables)
    header = {"format": FORMAT, "game": game, "params_bytes": len(payload),
              "params_sha256": hashlib.sha256(payload).hexdigest(), "metadata": metadata or {},
              "network": to_dict(cfg)}
    _write_atomic(directory / PARAMS_FILE, payload)
    _write_atomic(directory / CONFIG_FILE, yaml.safe_dump(header, sort_keys=False).encode())
    return directory


# options that add parameters initialised to change nothing (the value skip's Dense starts at zero):
# a network without them can start a network with them, the added parameters at their fresh values
GROWING_OPTIONS = {"resnet": ("value_input_skip",)}


def variables_for(directory: str | os.PathLike, game: str, cfg: NetworkConfig,
                  fresh: Optional[Callable[[], dict]] = None) -> dict:
    """The variables (params, batch_stats) of the network directory `directory` to start a network of
    `cfg` playing `game` from; ValueError in one line if it plays another game or has another shape.
    With `fresh` (the new network's initial variables, made on demand), `cfg` may also be the stored
    network grown by GROWING_OPTIONS: its variables then, every stored one replaced by the directory's."""
    ckpt = load(directory)
    if ckpt.game != game:
        raise ValueError(f"plays {ckpt.game or 'no pgx game'}, this run plays {game}: start from a network of this game")
    stored = {"params": ckpt.variables["params"], "batch_stats": ckpt.variables.get("batch_stats", {})}
    if ckpt.config.architecture() == cfg.architecture():
        return stored
    if fresh is not None and grows(ckpt.config, cfg):
        return graft(stored, fresh())
    growing = ", ".join(f"network.{f}.{o}" for f, opts in GROWING_OPTIONS.items() for o in opts)
    raise ValueError(f"is a {ckpt.config.describe()}, the run's network a {cfg.describe()}: "
                     f"set network.* as in its network.yaml (only {growing} may be switched on), "
                     "or start from a network of this shape")


def grows(old: NetworkConfig, new: NetworkConfig) -> bool:
    """Whether `new` is `old` with some of GROWING_OPTIONS switched on and nothing else changed."""
    if old.family != new.family:
        return False
    options = GROWING_OPTIONS.get(new.family, ())
    if any(getattr(getattr(old, old.family), o) and not getattr(getattr(new, new.family), o) for o in options):
        return False  # switched off: the stored parameters would have nowhere to go
    reverted = {o: getattr(getattr(old, old.family), o) for o in options}
    sub = dataclasses.replace(getattr(new, new.family), **reverted)
    return dataclasses.replace(new, **{new.family: sub}).architecture() == old.architecture()


def graft(stored: dict, fresh: dict) -> dict:
    """`fresh` variables with every leaf `stored` also holds replaced by its stored value (shapes must
    agree: ValueError naming the first that does not, or a stored leaf `fresh` lacks)."""
    flat = flax.traverse_util.flatten_dict(jax.device_get(fresh))
    for path, value in flax.traverse_util.flatten_dict(stored).items():
        if path not in flat or np.shape(flat[path]) != np.shape(value):
            raise ValueError(f"holds {'/'.join(path)} {np.shape(value)}, which the grown network "
                             f"{'has as ' + str(np.shape(flat[path])) if path in flat else 'lacks'}")
        flat[path] = value
    return flax.traverse_util.unflatten_dict(flat)


def _read_header(path: Path) -> dict:
    try:
        header = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: not valid YAML ({e})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(f"{path}: not a zerochess network config (expected format {FORMAT})")
    for key in ("network", "params_bytes", "params_sha256"):
        if key not in header:
            raise ValueError(f"{path}: missing '{key}'")
    return header


def load(directory: str | os.PathLike, check: bool = True) -> NetworkDir:
    """Reads a checkpoint written by `save`; `check` verifies the parameter shapes against the config."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"network checkpoint not found: {directory}")
    config_path, params_path = directory / CONFIG_FILE, directory / PARAMS_FILE
    for path in (config_path, params_path):
        if not path.is_file():
            raise FileNotFoundError(f"network checkpoint {directory} has no {path.name}")
    header = _read_header(config_path)
    try:
        cfg = from_dict(NetworkConfig, upgrade_network_dict(header["network"], header.get("game")), prefix="network")
    except ConfigError as e:
        raise ValueError(f"{config_path}: {e}") from None
    payload = params_path.read_bytes()
    if len(payload) != header["params_bytes"]:
        raise ValueError(f"{params_path}: {len(payload)} bytes, expected {header['params_bytes']} "
                         f"(truncated or overwritten); {_REPAIR}")
    if hashlib.sha256(payload).hexdigest() != header["params_sha256"]:
        raise ValueError(f"{params_path}: checksum mismatch (corrupted file); {_REPAIR}")
    try:
        variables = flax.serialization.msgpack_restore(payload)
    except Exception as e:  # msgpack raises several unrelated types on bad bytes
        raise ValueError(f"{params_path}: cannot decode parameters ({type(e).__name__}: {e})") from None
    game = header.get("game")
    if check:
        _check_fits(variables, cfg, game, params_path)
    return NetworkDir(cfg, variables, game, dict(header.get("metadata") or {}))
