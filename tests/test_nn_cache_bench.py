"""bench/nn_cache.py: its node keys are exact observation keys, and its hit counting by hand."""
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import nn_cache  # noqa: E402

import games  # noqa: E402
import search  # noqa: E402
from search import SearchConfig  # noqa: E402


def test_hits_by_hand():
    # two games, two searches each; game 1 ends after its first search
    first = np.array([[1, 2, 2, 0], [7, 8, 0, 0]], np.uint64)   # game 0: key 2 twice (a transposition)
    second = np.array([[2, 3, 1, 4], [9, 9, 9, 9]], np.uint64)  # game 0: 2 from the last search, 1 as well
    alive = [np.array([True, True]), np.array([True, False])]
    got = nn_cache.count_hits([first, second], alive)
    assert got == {"evaluations": 3 + 2 + 4, "within_search": 1, "previous_search": 1 + 2, "whole_game": 1 + 2}
    third = np.array([[5, 5, 0, 0], [0, 0, 0, 0]], np.uint64)
    fourth = np.array([[1, 0, 0, 0], [0, 0, 0, 0]], np.uint64)  # 1 was two searches ago: whole game only
    got = nn_cache.count_hits([first, second, third, fourth], alive + [alive[1], alive[1]])
    assert got["previous_search"] == 1 + 2 + 1 and got["whole_game"] == 1 + 2 + 1 + 1


def test_node_keys_are_observation_keys():
    """Expanded nodes are keyed by their observation (the root: its own; a child: the position after
    its move); unexpanded nodes key 0; the next search's root is a node of the last tree."""
    game = games.make("tic_tac_toe")
    evaluate = lambda v, o: (jnp.zeros((o.shape[0], game.num_actions)), jnp.zeros((o.shape[0],)))
    cfg = SearchConfig(policy="puct", num_simulations=6, root_noise=False, temperature_plies=0)
    run = search.make_search(game, evaluate, cfg, return_tree=True)
    states = game.init(jax.random.split(jax.random.PRNGKey(0), 2))
    out, tree = run(None, states, jax.random.PRNGKey(1))
    keys = nn_cache.node_keys(game, tree)
    visits = np.asarray(tree.node_visits)
    assert np.all((keys != 0) == (visits > 0)) and (visits > 0).sum(1).tolist() == [7, 7]
    own = lambda s: nn_cache.node_keys(game, _one_node_tree(s))[:, 0]
    np.testing.assert_array_equal(keys[:, 0], own(states))
    after = game.step(states, out.action)
    assert all(own(after)[b] in keys[b].tolist() for b in range(2))


def _one_node_tree(states):
    """A stand-in tree whose only node is each state (node_keys reads embeddings and node_visits)."""
    class Tree:
        embeddings = search.Node(jax.tree.map(lambda x: x[:, None], states), None)
        node_visits = jnp.ones((states.current_player.shape[0], 1), jnp.int32)
    return Tree()
