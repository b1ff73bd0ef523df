"""The value's side-to-move offset (distill/calibrate.py): the fit against a known shift, the boards
against python-chess, and the command end to end on a tiny ResNet whose values it must shift exactly."""
from __future__ import annotations

import dataclasses

import chess
import numpy as np
import pytest

import games
import models
from configs.loader import ConfigError, load
from distill.calibrate import (
    calibrate,
    fit,
    fit_offset,
    measure,
    network_values,
    sf_boards,
    shifted,
    shifted_variables,
    value_output_layer,
)
from distill.config import DistillConfig
from distill.records import RecordStore, ShardWriter
from models import network_dir

MATE = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"  # a1a8 mates
QUIET = ["rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1", chess.STARTING_FEN,
         "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"]


def test_the_fit_finds_a_known_pre_tanh_shift():
    """Values that are a scaled Stockfish value plus 0.3 before the tanh, over Stockfish values symmetric
    about zero (so the unshifted fit's intercept is zero): the shift found is 0.3, and it leaves no offset."""
    sf = np.linspace(-0.9, 0.9, 181)
    values = np.tanh(np.arctanh(0.4 * sf) + 0.3)
    assert fit(values, sf).intercept > 0.1
    shift = fit_offset(values, sf)
    assert shift == pytest.approx(0.3, abs=1e-3)
    assert fit(shifted(values, shift), sf).intercept == pytest.approx(0.0, abs=1e-3)
    np.testing.assert_allclose(shifted(values, shift), 0.4 * sf, atol=1e-3)


def test_the_boards_are_the_record_and_each_successor_that_does_not_end_the_game():
    board = chess.Board(MATE)
    moves = [m.uci() for m in board.legal_moves]
    values = [1.0 if m == "a1a8" else (0.2 if m == "a1a2" else 0.5) for m in moves]
    fens, sf = sf_boards([{"fen": MATE, "moves": moves, "values": values}])
    assert fens[0] == MATE and sf[0] == pytest.approx(1.0)  # its best move's value, mapped to [-1, 1]
    assert len(fens) == len(moves)  # every move's board but the mate's
    for move, w in zip(moves, values):
        if move == "a1a8":
            continue
        board.push_uci(move)
        assert sf[fens.index(board.fen())] == pytest.approx(1 - 2 * w)  # the opponent's value there
        board.pop()


def _tiny_network(path, offset: float):
    """A 1x8 ResNet (value hidden 8) with `offset` added to its value's pre-tanh sum."""
    cfg = models.NetworkConfig(family="resnet", resnet=models.ResNetConfig(num_blocks=1, filters=8, value_hidden=8))
    ev = models.load_evaluation(cfg, games.make("chess").spec, seed=1)
    network_dir.save(path, cfg, shifted_variables(ev.variables, 8, -offset), game="chess", metadata={"step": 7})


def _evaluate_and_variables(path):
    ev = models.load_evaluation(path)
    return ev.evaluate, ev.variables


def test_calibrate_writes_a_copy_whose_values_are_shifted_exactly_and_unbiased(tmp_path):
    with ShardWriter(tmp_path / "rec") as w:
        for i, fen in enumerate([MATE, *QUIET]):
            moves = [m.uci() for m in chess.Board(fen).legal_moves]
            values = [0.3 + 0.4 * (k % 3) / 2 for k in range(len(moves))]
            w.write({"fen": fen, "game": f"g#{i}", "ply": 0, "moves": moves, "values": values, "value": max(values)})
    _tiny_network(tmp_path / "net", offset=0.5)
    cfg = load(DistillConfig, None, [f"data.records={tmp_path / 'rec'}", "data.test_fraction=0.99",
                                     f"calibrate.network={tmp_path / 'net'}", f"calibrate.out={tmp_path / 'cal'}"])
    summary = calibrate(cfg)
    store = RecordStore(tmp_path / "rec")
    held_out = store.split("test", 0.99)
    assert summary["boards"] == len(held_out) >= 3 and summary["before"]["intercept"] > 0.2
    assert abs(summary["after"]["intercept"]) < 1e-3
    fens, _ = sf_boards(store[int(i)] for i in held_out)
    before = network_values(*_evaluate_and_variables(tmp_path / "net"), fens)
    after = network_values(*_evaluate_and_variables(tmp_path / "cal"), fens)
    np.testing.assert_allclose(after, shifted(before, summary["shift"]), atol=2e-5)
    saved = network_dir.load(tmp_path / "cal")
    assert saved.metadata["step"] == 7 and saved.metadata["value_calibration"]["shift_total"] == summary["shift"]
    assert network_dir.load(tmp_path / "net").metadata == {"step": 7}  # the original is kept as it was
    assert "search" not in saved.metadata  # none recorded, none asked for
    # the recorded search changed on request (checked as a SearchConfig), the rest kept
    searched = calibrate(dataclasses.replace(cfg, calibrate=dataclasses.replace(
        cfg.calibrate, out=str(tmp_path / "cal2"), search=("policy=puct", "q_transform=fpu"))))
    recorded = network_dir.load(searched["out"]).metadata["search"]
    assert (recorded["policy"], recorded["q_transform"]) == ("puct", "fpu")
    with pytest.raises(ConfigError, match="polcy"):
        calibrate(dataclasses.replace(cfg, calibrate=dataclasses.replace(
            cfg.calibrate, out=str(tmp_path / "cal3"), search=("polcy=puct",))))
    assert not (tmp_path / "cal3").exists()


def test_a_network_without_one_value_output_is_one_error():
    with pytest.raises(ValueError, match="no single value output layer"):
        shifted_variables({"params": {"Dense_0": {"kernel": np.zeros((4, 3)), "bias": np.zeros(3)}}}, 4, 0.1)


def _records(path, copies: int = 1):
    """MATE and QUIET with move values spread over [0.1, 0.9] (successors valued -0.8..0.8)."""
    with ShardWriter(path) as w:
        for c in range(copies):
            for i, fen in enumerate([MATE, *QUIET]):
                moves = [m.uci() for m in chess.Board(fen).legal_moves]
                values = [0.1 + 0.8 * ((k * 7 + i) % 9) / 8 for k in range(len(moves))]
                w.write({"fen": fen, "game": f"g#{c}-{i}", "ply": 0, "moves": moves, "values": values,
                         "value": max(values)})


def test_a_flat_value_is_refused_in_one_line(tmp_path):
    """A constant value (its output kernel zeroed) has no offset to remove: one line, no copy."""
    _records(tmp_path / "rec")
    cfg = models.NetworkConfig(family="resnet", resnet=models.ResNetConfig(num_blocks=1, filters=8, value_hidden=8))
    ev = models.load_evaluation(cfg, games.make("chess").spec, seed=1)
    params = {k: dict(v) for k, v in ev.variables["params"].items()}
    head = value_output_layer(params, 8)
    params[head]["kernel"] = np.zeros((8, 1), np.float32)
    network_dir.save(tmp_path / "flat", cfg, {**ev.variables, "params": params}, game="chess")
    with pytest.raises(ValueError, match="the same on all.*no offset to remove"):
        calibrate(load(DistillConfig, None, [f"data.records={tmp_path / 'rec'}", "data.test_fraction=0.99",
                                             f"calibrate.network={tmp_path / 'flat'}",
                                             f"calibrate.out={tmp_path / 'cal'}"]))
    assert not (tmp_path / "cal").exists()


def test_a_warm_start_ends_calibrated_where_its_value_follows_stockfish(tmp_path, monkeypatch):
    """warm_start.calibrate_boards: with the correlation threshold set to pass, the saved network's value
    read back from its directory has no offset on the held-out boards and their successors and its
    metadata records the shift; set never to pass, `calibrated` returns what it was given."""
    from distill import calibrate as module
    from distill.warm_start import warm_start
    monkeypatch.setattr(module, "MIN_CORRELATION", -1.0)
    _records(tmp_path / "rec", copies=8)
    (tmp_path / "tiny.yaml").write_text("game: chess\nnetwork:\n  family: resnet\n"
                                        "  resnet: {num_blocks: 1, filters: 8, value_hidden: 8}\n")
    summary = warm_start(load(DistillConfig, None, [
        f"data.records={tmp_path / 'rec'}", "data.test_fraction=0.25", f"warm_start.selfplay={tmp_path / 'tiny.yaml'}",
        f"warm_start.out_dir={tmp_path / 'ws'}", "warm_start.batch_size=16", "warm_start.max_steps=20",
        "warm_start.successor_boards=4", "warm_start.progress=false"]))
    saved, store = network_dir.load(summary["network"]), RecordStore(tmp_path / "rec")
    again = measure(saved.module(), saved.variables, store, 0.25, 500)
    fitted = summary["value_calibration"]
    assert saved.metadata["value_calibration"] == fitted and fitted["boards"] == again["boards"]
    assert abs(fitted["before"]["intercept"]) > 1e-2 and abs(again["before"]["intercept"]) < 1e-3
    monkeypatch.setattr(module, "MIN_CORRELATION", 1.1)
    variables, metadata = module.calibrated(saved.module(), saved.variables, 8, {"step": 1}, store, 0.25, 500)
    assert variables is saved.variables and metadata == {"step": 1}  # kept as trained
