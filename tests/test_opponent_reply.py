"""The opponent-reply head end to end: a Learner whose network has it asks the replay buffer (a Ray
actor over real game records) for the next positions' policies and trains on them; without the head
it asks for nothing and reports no such loss."""
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_replay import make_record  # noqa: E402

import games  # noqa: E402
import models  # noqa: E402
from configs.loader import load  # noqa: E402
from learner.learner import Learner  # noqa: E402
from learner.train import init_train_state  # noqa: E402
from replay.buffer import ReplayBuffer  # noqa: E402
from replay.config import ReplayConfig  # noqa: E402
from replay.record import encode  # noqa: E402
from selfplay.config import SelfPlayConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("head", [True, False])
def test_learner_trains_the_opponent_reply_from_the_replay_buffer(local_ray, tmp_path, head):
    ray = local_ray
    cfg = load(SelfPlayConfig, ROOT / "configs/tic_tac_toe.yaml",
               [f"network.resnet.opponent_policy_head={str(head).lower()}", "learner.batch_size=16",
                "learner.publish_every=100", "learner.augment=true"])
    game = games.make("tic_tac_toe")
    replay = ray.remote(ReplayBuffer).remote(str(tmp_path), ReplayConfig(), 9, 9)
    for i in range(4):
        ray.get(replay.add.remote(encode(make_record(f"g{i}", 7, seed=i))))
    net = models.make_network(cfg.network, game.spec)
    state = jax.device_get(init_train_state(net, cfg.learner, np.zeros((1, 3, 3, 2), np.float32),
                                            jax.random.PRNGKey(0)))
    assert ("opponent_policy" in state.params) == head

    @ray.remote
    class Store:
        def publish(self, version, variables):
            pass

    learner = Learner("tic_tac_toe", cfg.network, cfg.learner, state, replay, Store.remote())
    first = learner.train(1).metrics
    later = learner.train(30).metrics
    if not head:
        assert first.opponent_policy_loss is None and later.opponent_policy_loss is None
        return
    # the synthetic replies are Dirichlet policies over 5 moves: the loss starts near ln 5 and falls
    assert 1.0 < first.opponent_policy_loss < 2.5 and later.opponent_policy_loss < first.opponent_policy_loss
    moved = jax.tree.map(lambda a, b: float(np.max(np.abs(a - b))), learner.train_state().params["opponent_policy"],
                         state.params["opponent_policy"])
    assert max(jax.tree.leaves(moved)) > 1e-3

