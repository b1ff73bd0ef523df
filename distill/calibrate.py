"""The value's side-to-move offset: measured on held-out annotated boards and their successors, removed.

A distilled value regresses toward the mean of its training targets: fitted against Stockfish's
values it reads `v = a + b * sf` with b < 1, and where the targets' mean is not zero (successor
boards after uniformly drawn moves favour the side to move: their targets average about +0.4)
the intercept `a` is a bonus for being the side to move. A search backs values up by negamax, so
that bonus enters every node with the sign of its depth: a move whose subtree is searched deeper
gains it every second ply, and a piece hung one ply down can look better than a quiet move
(measured: docs/experiments/2026-11-29-value-side-to-move-offset.md).

`fit_offset` finds the shift of the value's pre-tanh sum that brings `a` to zero over the boards
and every successor Stockfish valued (`v' = tanh(atanh(v) - shift)`), `shifted_variables` folds it
into the value's output bias, so that the network directory plays calibrated everywhere with no
change to any search.

    distill.py calibrate --config configs/distill_cpu.yaml --set data.records=DIR calibrate.network=NET calibrate.out=NET2
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from games import chess_bridge, chess_observation

_CHUNK = 512  # boards per network call
# an intercept means something only where the value follows Stockfish's: below this correlation
# (a value still flat, or one never trained on successor boards) there is no offset to remove
MIN_CORRELATION = 0.3


@dataclasses.dataclass(frozen=True)
class Fit:
    """The value against Stockfish's, both in [-1, 1] for the side to move: v = intercept + slope * sf."""
    intercept: float  # the side-to-move offset (0 for a value consistent under negamax)
    slope: float
    correlation: float
    boards: int


def sf_boards(records) -> tuple[list[str], np.ndarray]:
    """(FENs, Stockfish's value for their side to move in [-1, 1]) of each record's board (its best
    move's value) and of every successor that does not end the game (1 - that move's value)."""
    fens, values = [], []
    for rec in records:
        board = chess_bridge.parse_fen(rec["fen"])
        fens.append(rec["fen"])
        values.append(2.0 * max(rec["values"]) - 1.0)
        for move, w in zip(rec["moves"], rec["values"]):
            board.push_uci(move)
            if not board.is_game_over(claim_draw=False):
                fens.append(board.fen())
                values.append(1.0 - 2.0 * float(w))
            board.pop()
    return fens, np.asarray(values, np.float64)


def network_values(evaluate, variables, fens: list[str]) -> np.ndarray:
    """The network's value [len(fens)] for each FEN's side to move (a FEN carries no history);
    `evaluate(variables, obs)` as models.evaluation_fn makes it."""
    apply = jax.jit(evaluate)
    out = []
    for start in range(0, len(fens), _CHUNK):
        boards = [chess_bridge.parse_fen(fen) for fen in fens[start:start + _CHUNK]]
        out.append(np.asarray(apply(variables, jnp.asarray(chess_observation.boards_to_observations(boards))).value))
    return np.concatenate(out).astype(np.float64)


def fit(values: np.ndarray, sf: np.ndarray) -> Fit:
    slope, intercept = np.polyfit(sf, values, 1)
    spread = np.std(values) * np.std(sf)
    correlation = float(np.mean((values - values.mean()) * (sf - sf.mean())) / spread) if spread else float("nan")
    return Fit(float(intercept), float(slope), correlation, len(values))


def shifted(values: np.ndarray, shift: float) -> np.ndarray:
    """The values with `shift` taken from their pre-tanh sum."""
    return np.tanh(np.arctanh(np.clip(values, -1 + 1e-7, 1 - 1e-7)) - shift)


def fit_offset(values: np.ndarray, sf: np.ndarray, tolerance: float = 1e-4) -> float:
    """The pre-tanh shift that makes fit(shifted(values), sf).intercept zero (bisection: the
    intercept falls as the shift grows)."""
    low, high = -3.0, 3.0
    while high - low > tolerance:
        mid = (low + high) / 2
        low, high = (mid, high) if fit(shifted(values, mid), sf).intercept > 0 else (low, mid)
    return (low + high) / 2


def shifted_variables(variables: dict, value_hidden: int, shift: float) -> dict:
    """`variables` with `shift` taken from the ResNet value head's output bias: the one Dense layer
    whose kernel maps value_hidden units to one (models/resnet.py; the value's pre-tanh sum)."""
    params = dict(variables["params"])
    head = value_output_layer(params, value_hidden)
    params[head] = {**params[head], "bias": np.asarray(params[head]["bias"]) - np.float32(shift)}
    return {**variables, "params": params}


def value_output_layer(params: dict, value_hidden: int) -> str:
    """The name of the ResNet value head's output Dense layer in `params` (its kernel maps value_hidden
    units to one: the value's pre-tanh sum); one ValueError line where there is not exactly one."""
    heads = [name for name, p in params.items()
             if isinstance(p, dict) and set(p) == {"kernel", "bias"} and np.shape(p["kernel"]) == (value_hidden, 1)]
    if len(heads) != 1:
        raise ValueError(f"calibrate: no single value output layer ({value_hidden} -> 1) in this network "
                         f"(found {heads or 'none'}); the calibration is for the self-play ResNet")
    return heads[0]


def _search_with(recorded: dict | None, overrides) -> dict:
    """The recorded search (else SearchConfig's defaults) with `overrides` ("key=value"), checked."""
    from configs import apply_overrides, from_dict, to_dict
    from search import SearchConfig
    base = from_dict(SearchConfig, recorded, prefix="search") if recorded else SearchConfig()
    return to_dict(apply_overrides(base, overrides))


def measure(module, variables, store, test_fraction: float, max_boards: int) -> dict:
    """The offset of `module`'s value (its pre-tanh shift, both fits) on the first `max_boards`
    held-out boards of `store` (a RecordStore) and their successors."""
    import models
    held_out = store.split("test", test_fraction)[:max_boards]
    if not len(held_out):
        raise ValueError(f"calibrate: {store.dir} has no held-out boards (data.test_fraction {test_fraction:g})")
    fens, sf = sf_boards(store[int(i)] for i in held_out)
    values = network_values(models.evaluation_fn(module), variables, fens)
    shift = fit_offset(values, sf)
    return {"records": str(store.dir), "boards": len(held_out), "successors": len(fens) - len(held_out),
            "shift": shift, "before": dataclasses.asdict(fit(values, sf)),
            "after": dataclasses.asdict(fit(shifted(values, shift), sf))}


def follows_stockfish(measured: dict) -> bool:
    """Whether `measure`'s value tracks Stockfish's enough for its offset to be removed."""
    return measured["before"]["correlation"] >= MIN_CORRELATION  # NaN (a constant value) is False


def apply_calibration(variables: dict, value_hidden: int, metadata: dict, measured: dict) -> tuple[dict, dict]:
    """(variables, metadata) with `measured`'s shift folded into the value's output bias and recorded
    as metadata `value_calibration` (its shift_total adds an earlier pass's)."""
    earlier = metadata.get("value_calibration", {}).get("shift_total", 0.0)
    return (shifted_variables(variables, value_hidden, measured["shift"]),
            {**metadata, "value_calibration": {**measured, "shift_total": earlier + measured["shift"]}})


def calibrated(module, variables, value_hidden: int, metadata: dict, store, test_fraction: float,
               max_boards: int) -> tuple[dict, dict]:
    """A finished warm start's (variables, metadata) with its value's offset removed where the value
    follows Stockfish's, else as they were; one line says which."""
    measured = measure(module, variables, store, test_fraction, max_boards)
    offset, trusted = measured["before"]["intercept"], follows_stockfish(measured)
    print(f"warm-start: value offset {offset:+.3f} " + (
        f"removed (pre-tanh shift {measured['shift']:+.3f}" if trusted else
        f"kept (its correlation with Stockfish's value is {measured['before']['correlation']:.2f}")
        + f", {measured['boards']} held-out boards and their successors)", flush=True)
    return apply_calibration(variables, value_hidden, metadata, measured) if trusted else (variables, metadata)


def calibrate(cfg) -> dict:
    """`distill.py calibrate`: fits the offset of `cfg.calibrate.network`'s value on the first
    `max_boards` held-out boards of `cfg.data.records` and their successors, writes the shifted copy
    to `calibrate.out` (metadata `value_calibration`: the shift and both fits; `calibrate.search` changes its
    recorded search); returns that summary."""
    from distill.records import RecordStore
    from models import network_dir

    c = cfg.calibrate
    if not c.network:
        raise ValueError("calibrate.network is empty: name the network directory to calibrate")
    source = network_dir.load(c.network)
    if source.config.family != "resnet":
        raise ValueError(f"calibrate: {c.network} is a {source.config.family}; the calibration is for the "
                         "self-play ResNet, whose value a search reads")
    measured = measure(source.module(), source.variables, RecordStore(cfg.data.records), cfg.data.test_fraction,
                       c.max_boards)
    if not np.isfinite(measured["before"]["correlation"]):  # asked for, a weak value is calibrated; a flat one not
        raise ValueError(f"calibrate: {c.network}'s value is the same on all {measured['boards']} held-out boards "
                         "and their successors: there is no offset to remove")
    summary = {"network": c.network, "out": c.out or f"{c.network.rstrip('/')}_calibrated", **measured}
    variables, metadata = apply_calibration(source.variables, source.config.resnet.value_hidden, source.metadata,
                                            summary)
    if c.search:
        metadata["search"] = _search_with(source.metadata.get("search"), c.search)
    network_dir.save(summary["out"], source.config, variables, game=source.game, metadata=metadata)
    return summary
