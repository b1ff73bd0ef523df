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
from distill.calibrate import calibrate, fit, fit_offset, network_values, sf_boards, shifted, shifted_variables
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
    before = network_values(models.load_evaluation(tmp_path / "net"), fens)
    after = network_values(models.load_evaluation(tmp_path / "cal"), fens)
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
