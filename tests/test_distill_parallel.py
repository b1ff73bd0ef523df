"""Data-parallel student training: a step with the batch split over two CPU devices moves the
parameters as the one-device step does (up to summation order), train() runs with
train.devices=2, its state resumes on one device, and train() refuses a device count or batch
that does not fit; the warm start trains on both devices too.

Two CPU devices need XLA_FLAGS before jax starts, so the check runs in a fresh interpreter."""
import textwrap
from pathlib import Path

from conftest import TWO_DEVICE_CHECKS

ROOT = Path(__file__).resolve().parent.parent

CHECK = textwrap.dedent("""
    import dataclasses, sys
    import chess, jax, numpy as np, optax
    from configs.loader import load
    from distill import dataset, records, student, train
    from distill.config import DistillConfig
    from learner.parallel import data_parallel
    from models.network import make_student

    assert len(jax.devices()) == 2, jax.devices()
    out = sys.argv[1]
    rng = np.random.default_rng(0)
    with records.ShardWriter(out + "/rec") as writer:
        board = chess.Board()
        for i in range(24):
            moves = [m.uci() for m in board.legal_moves]
            writer.write({"fen": board.fen(), "game": f"g{i}", "moves": moves, "value": 0.5,
                          "values": rng.random(len(moves)).tolist()})
            board.push_uci(moves[i % len(moves)])
            if board.is_game_over():
                board = chess.Board()
    cfg = load(DistillConfig, None, [
        f"data.records={out}/rec", "data.target=av_all", "data.test_fraction=0",
        "student.family=chessformer", "student.embedding_dim=16", "student.num_layers=1",
        "student.num_heads=2", "train.batch_size=8", "train.max_steps=4", "train.progress=false",
        "train.learning_rate=0.01", f"train.out_dir={out}/cf"])

    # one step on one device against the same step with the batch split over two
    store = records.RecordStore(cfg.data.records)
    ex = dataset.load_examples(store, range(len(store)))
    net_cfg = student.network_config(cfg.student, "av_all")
    module = make_student(net_cfg)
    tx = optax.sgd(0.1)  # an update linear in the gradient (Adam's first step is ~sign(g): near-zero
    state = train.initial_state(module, net_cfg, "av_all", tx, 0)  # gradients would flip on rounding)
    batch = dataset.sample_batch(ex, "av_all", rng, 8, "chessformer")
    step = train.make_step(module, net_cfg, "av_all", "ce", tx, 0.99, 1.0)
    one, loss_one = step(jax.device_put(state, jax.devices()[0]), jax.device_put(batch, jax.devices()[0]))
    replicated, split = data_parallel(2, 8)
    two, loss_two = step(jax.device_put(state, replicated), jax.device_put(batch, split))
    assert len(two["params"]["embedding"]["kernel"].sharding.device_set) == 2
    np.testing.assert_allclose(float(loss_one), float(loss_two), rtol=1e-5)
    moved = jax.tree.map(lambda a, b: float(np.max(np.abs(np.asarray(a) - np.asarray(b)))),
                         one["params"], state["params"])
    assert max(jax.tree.leaves(moved)) > 1e-3  # a real update
    jax.tree.map(lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6),
                 one["params"], two["params"])

    summary = train.train(cfg)  # train.devices=0: both devices
    assert summary["devices"] == 2 and summary["steps"] == 4, summary
    # the two-device run's state resumes on one device
    resumed = train.train(dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, devices=1, max_steps=6)))
    assert resumed["devices"] == 1 and resumed["steps"] == 6 and resumed["new_steps"] == 2, resumed
    for devices, batch_size, words in ((3, 8, "only 2"), (2, 7, "does not split")):
        bad = dataclasses.replace(cfg, train=dataclasses.replace(
            cfg.train, devices=devices, batch_size=batch_size, out_dir=f"{out}/bad"))
        try:
            train.train(bad)
        except ValueError as e:
            assert words in str(e), e
        else:
            raise AssertionError(f"devices={devices} batch={batch_size} trained")

    # the warm start (the self-play ResNet on the same records) splits its batches too
    from distill.warm_start import warm_start
    open(out + "/tiny.yaml", "w").write("game: chess\\nnetwork:\\n  family: resnet\\n"
                                         "  resnet: {num_blocks: 1, filters: 8, value_hidden: 8}\\n")
    ws = warm_start(load(DistillConfig, None, [
        f"data.records={out}/rec", "data.test_fraction=0.25", f"warm_start.selfplay={out}/tiny.yaml",
        f"warm_start.out_dir={out}/ws", "warm_start.batch_size=8", "warm_start.max_steps=3",
        "warm_start.progress=false"]))
    assert ws["devices"] == 2 and ws["steps"] == 3 and np.isfinite(ws["test"]["value_mse"]), ws
    print("ok")
""")
TWO_DEVICE_CHECKS["distill"] = CHECK


def test_two_device_step_equals_one_device_step(two_device_checks):
    assert two_device_checks["distill"] == "ok", two_device_checks["distill"]