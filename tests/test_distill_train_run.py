"""A tiny student trained end to end: annotated by Stockfish, trained, resumed (its clock, a stop, a
spent budget, a damaged state), then evaluate() with all its metrics, and with Stockfish as the player."""
import dataclasses
import json
from pathlib import Path

import chess
import pytest
from by_path import load_module

from distill import annotate, boards, train
from distill.config import DistillConfig
from distill.evaluate import evaluate
from runtime import signals


def _damaged_states_are_set_aside_or_named(cfg, overrides: list[str], state_dir: Path, capsys) -> None:
    """A truncated newest training state: set aside, the one before it resumed, with one warning; none
    readable: distill.py names the directory in one line and moves nothing."""
    capsys.readouterr()
    steps = sorted(int(p.name) for p in state_dir.iterdir() if p.name.isdigit())
    assert steps == [7, 8]
    data = max((p for p in (state_dir / "8").rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
    data.write_bytes(data.read_bytes()[:200])
    resumed = train.train(dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, max_steps=9)))
    assert resumed["steps"] == 9 and resumed["new_steps"] == 2  # from step 7
    err = capsys.readouterr().err
    assert "checkpoint step 8 is unreadable" in err and "restored step 7 instead, the steps since are" in err
    assert (state_dir / "unreadable-8").is_dir()
    for step in (7, 9):
        (state_dir / str(step) / "state" / "_METADATA").write_text("garbage")
    cli = load_module(Path(__file__).resolve().parent.parent / "distill.py", "distill_cli")
    assert cli.main(["train", "--set", *overrides, "train.max_steps=10"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"distill.py train: error: no readable checkpoint in {state_dir}") and "\n" not in err
    assert err.endswith("move that directory away and rerun to train from step 0")
    assert (state_dir / "9").is_dir() and (state_dir / "7").is_dir()


@pytest.mark.slow
def test_train_then_evaluate_produces_all_metrics(tmp_path, monkeypatch, capsys):
    game = chess.Board()
    fens = []
    for uci in ["e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4", "f3d4", "g8f6", "b1c3", "a7a6"]:
        fens.append(game.fen())
        game.push_uci(uci)
    gbs = [boards.GameBoard(game=f"g#{i}", ply=i, fen=f) for i, f in enumerate(fens)]
    annotate.annotate(gbs, tmp_path / "rec", nodes_per_move=5, show_progress=False)
    puzzles = tmp_path / "puzzles.csv"
    puzzles.write_text("PuzzleId,FEN,Moves,Rating\n"
                       f"a,{chess.STARTING_FEN},f2f3 e7e5 g2g4 d8h4,900\n"
                       "b,6k1/5ppp/8/8/8/8/5PPP/R5K1 b - - 0 1,g8h8 a1a8,1500\n")
    monkeypatch.setenv("ZEROCHESS_DATA", str(tmp_path))
    from configs.loader import load
    overrides = [
        f"data.records={tmp_path / 'rec'}", "data.test_fraction=0.5", "student.num_bins=16",
        "student.embedding_dim=16", "student.num_layers=1", "student.num_heads=2",
        "train.batch_size=8", "train.max_steps=6", "train.checkpoint_every=3", "train.log_every=2",
        f"train.out_dir={tmp_path / 'av'}", "train.progress=false", "evaluate.puzzles=puzzles.csv"]
    cfg = load(DistillConfig, None, overrides)
    first = train.train(cfg)
    assert first["steps"] == 6 and first["final_train_loss"] > 0
    capsys.readouterr()
    resumed = train.train(dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, max_steps=8,
                                                                             checkpoint_every=1, progress=True)))
    assert resumed["steps"] == 8 and resumed["new_steps"] == 2  # resumed from the step-6 state
    # not a terminal: one plain line per checkpoint in place of the live bar
    assert "train av: step 8/8, loss " in capsys.readouterr().out
    assert resumed["total_seconds"] >= first["seconds"] + resumed["seconds"] - 1e-6
    # a signal whose KeyboardInterrupt a gc callback swallowed still stops the loop at its next step
    signals._stop_requested = True
    with pytest.raises(KeyboardInterrupt):
        train.train(dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, max_steps=12)))
    assert not signals._stop_requested
    # max_seconds is the run's budget over all sessions: one already spent trains no further
    spent = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, max_steps=20,
                                                               max_seconds=first["seconds"] / 2))
    assert train.train(spent)["new_steps"] == 0
    assert (tmp_path / "av" / "tb").is_dir()
    _damaged_states_are_set_aside_or_named(cfg, overrides, tmp_path / "av" / "state", capsys)
    report = evaluate(cfg, show_progress=False)
    for key in ("action_accuracy", "kendall_tau", "puzzle_accuracy", "bands", "boards", "puzzles"):
        assert key in report
    assert report["boards"] > 0 and report["puzzles"] == 2
    assert 0.0 <= report["action_accuracy"] <= 1.0 and -1.0 <= report["kendall_tau"] <= 1.0
    assert json.loads(open(report["out"]).read())["puzzles"] == 2
    # a second evaluation with other settings replaces the JSON, and the history keeps both
    fewer = evaluate(dataclasses.replace(cfg, evaluate=dataclasses.replace(cfg.evaluate, max_puzzles=1)),
                     show_progress=False)
    assert fewer["out"] == report["out"] and json.loads(open(report["out"]).read())["puzzles"] == 1
    history = [json.loads(line) for line in open(Path(report["out"]).with_suffix(".jsonl"))]
    assert [h["puzzles"] for h in history] == [2, 1] and history[1]["settings"]["max_puzzles"] == 1
    sf = evaluate(dataclasses.replace(cfg, evaluate=dataclasses.replace(
        cfg.evaluate, player="stockfish", out=str(tmp_path / "sf.json"))), show_progress=False)
    assert sf["bands"]["1200-1599"]["accuracy"] == 1.0  # the mate in one, even at 5 nodes/move
