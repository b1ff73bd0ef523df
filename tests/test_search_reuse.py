"""Tree reuse (search.reuse_tree): the played move's subtree carried into the next search, checked
against a host-side walk of the old tree, and Gumbel's Sequential Halving over the new visits only."""
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from local_actor import tic_tac_toe_actor
from test_search_tree import build_root, random_network, random_states

import games
from configs.loader import load
from search import Reuse, SearchConfig, legal_slots, make_search, tree_search
from search.game_search import Node, _slim, reuse_capacity
from selfplay.config import SelfPlayConfig

ROOT = Path(__file__).resolve().parents[1]

S = 24  # simulations per search


def _cfg(policy="puct"):
    # no certainty propagation: every simulation then makes a node (a walk does not stop at a decided
    # edge), so the node counts below are exact
    return SearchConfig(policy=policy, num_simulations=S, reuse_tree=True, root_noise=False, win_check="none",
                        certainty_propagation=False, temperature_plies=0, gumbel_scale=0.0,
                        max_num_considered_actions=4)


def _first_search(policy="puct", batch=4, plies=4):
    game = games.make("connect_four")
    evaluate = random_network(game, seed=3)
    cfg = _cfg(policy)
    fn = make_search(game, evaluate, cfg, return_tree=True)
    states = random_states(game, batch, plies, seed=5)
    out, tree = fn(None, states, jax.random.PRNGKey(0))
    return game, evaluate, cfg, fn, states, out, tree


def _played(out):
    """[B] slot of the most visited move and the pgx action it is."""
    slot = jnp.argmax(out.visit_counts, axis=1).astype(jnp.int32)
    return slot, out.slot_actions[jnp.arange(slot.shape[0]), slot]


def _walk_pairs(old, new, b, old_root):
    """Pairs (old node, new node) reached by walking both trees edge by edge from their roots."""
    pairs, stack = [], [(int(old_root), 0)]
    while stack:
        o, n = stack.pop()
        pairs.append((o, n))
        for a in range(old.children_index.shape[2]):
            co, cn = int(old.children_index[b, o, a]), int(new.children_index[b, n, a])
            if co >= 0:
                assert cn >= 0, (b, o, a)
                assert new.parents[b, cn] == n and new.action_from_parent[b, cn] == a
                stack.append((co, cn))
            else:
                assert cn < 0
    return pairs


def test_reroot_is_the_subtree_of_the_move_played():
    game, evaluate, cfg, _, states, out, tree = _first_search()
    tree = jax.device_get(tree)
    slot, action = _played(out)
    after = game.step(states, action)
    root, invalid = build_root(game, evaluate, after)
    fresh = tree_search.new_tree(root, reuse_capacity(cfg), invalid, None)
    new = jax.device_get(tree_search.reroot(tree, slot, jnp.ones(4, bool), fresh, max_nodes=reuse_capacity(cfg)))
    for b in range(4):
        child = int(tree.children_index[b, 0, slot[b]])
        pairs = _walk_pairs(tree, new, b, child)
        assert sorted(n for _, n in pairs) == list(range(len(pairs)))  # renumbered 0..k-1
        assert int(np.sum(new.node_visits[b] > 0)) == len(pairs) > 1  # and nothing else is used
        for o, n in pairs:
            for field in ("node_visits", "node_values", "children_visits", "children_values", "children_rewards",
                          "children_discounts"):
                np.testing.assert_array_equal(getattr(new, field)[b, n], getattr(tree, field)[b, o], err_msg=field)
            if n:  # the root takes the fresh prior (new root noise), the rest keep theirs
                np.testing.assert_array_equal(new.children_prior_logits[b, n], tree.children_prior_logits[b, o])
        np.testing.assert_array_equal(new.children_prior_logits[b, 0], fresh.children_prior_logits[b, 0])
        assert new.parents[b, 0] == tree_search.Tree.NO_PARENT
    # the new root is the position after the move, as the game stepped it
    want = jax.device_get(Node(_slim(after), legal_slots(game, after)))
    for got, ref in zip(jax.tree.leaves(jax.tree.map(lambda x: x[:, 0], new.embeddings)), jax.tree.leaves(want)):
        np.testing.assert_array_equal(got, ref)


def test_reroot_caps_the_nodes_kept_and_starts_fresh_rows_afresh():
    game, evaluate, cfg, _, states, out, tree = _first_search()
    slot, action = _played(out)
    root, invalid = build_root(game, evaluate, game.step(states, action))
    fresh = tree_search.new_tree(root, reuse_capacity(cfg), invalid, None)
    keep = jnp.array([True, False, True, True])
    capped = jax.device_get(tree_search.reroot(tree, slot, keep, fresh, max_nodes=3))
    whole = jax.device_get(tree_search.reroot(tree, slot, keep, fresh, max_nodes=reuse_capacity(cfg)))
    fresh = jax.device_get(fresh)
    for field in ("node_visits", "children_index", "children_prior_logits", "node_values"):
        np.testing.assert_array_equal(getattr(capped, field)[1], getattr(fresh, field)[1])
    for b in (0, 2, 3):
        used = int(np.sum(whole.node_visits[b] > 0))
        assert int(np.sum(capped.node_visits[b] > 0)) == min(3, used)
        linked = capped.children_index[b][capped.children_index[b] >= 0]
        assert linked.max(initial=0) < 3  # no edge leads to a dropped node
        # an edge into a dropped node keeps its visits and value (the next visit evaluates it again)
        np.testing.assert_array_equal(capped.children_visits[b, :3], whole.children_visits[b, :3])


@pytest.mark.parametrize("policy", ["puct", "gumbel"])
def test_a_reused_search_adds_its_simulations_to_the_subtree(policy):
    game, evaluate, cfg, fn, states, out, tree = _first_search(policy)
    slot, action = _played(out)
    after = game.step(states, action)
    keep = jnp.array([True, False, True, True])
    root, invalid = build_root(game, evaluate, after)
    start = jax.device_get(tree_search.reroot(tree, slot, keep, tree_search.new_tree(
        root, reuse_capacity(cfg), invalid, None), max_nodes=S + 1))
    out2, tree2 = jax.device_get(fn(None, after, jax.random.PRNGKey(1), Reuse(tree, slot, keep)))
    for b in range(4):
        before = int(np.sum(start.node_visits[b] > 0)) if keep[b] else 1
        assert int(np.sum(tree2.node_visits[b] > 0)) == before + S  # S new nodes, none overwritten
        assert tree2.node_visits[b, 0] == (start.node_visits[b, 0] if keep[b] else 1) + S
        assert out2.visit_counts[b].sum() == tree2.node_visits[b, 0] - 1
        if keep[b]:
            assert np.all(tree2.node_visits[b, :before] >= start.node_visits[b, :before])
            assert out2.visit_counts[b].sum() > S  # the reused visits count in the root statistics


def test_gumbel_halving_schedules_only_the_new_visits():
    """Sequential Halving's visit counts over the considered moves are fixed by (m, S): a reused
    search's new visits follow the same schedule as a fresh search's."""
    game, evaluate, cfg, fn, states, out, tree = _first_search("gumbel", batch=6, plies=2)
    slot, action = _played(out)
    after = game.step(states, action)
    fresh_out, _ = jax.device_get(fn(None, after, jax.random.PRNGKey(2)))
    reused_out, reused_tree = jax.device_get(fn(None, after, jax.random.PRNGKey(2), Reuse(tree, slot, jnp.ones(6, bool))))
    start = reused_tree.extra_data.root_start_visits
    assert start.sum() > 0
    for b in range(6):
        fresh_counts = sorted(fresh_out.visit_counts[b], reverse=True)
        new_counts = sorted(reused_out.visit_counts[b] - start[b], reverse=True)
        assert new_counts == fresh_counts and sum(new_counts) == S


@pytest.mark.usefixtures("local_ray")
def test_actor_carries_the_tree_between_plies():
    """The self-play actor hands each search the last tree and the moves played: games in progress
    keep their subtree (the root starts with visits), a finished game and new weights start afresh."""
    cfg = load(SelfPlayConfig, ROOT / "configs/tic_tac_toe.yaml",
               ["search.reuse_tree=true", "actors.games_per_actor=4", "actors.resign_threshold=-1"])
    actor, records = tic_tac_toe_actor(cfg, seed=2)
    sims, seen = cfg.search.num_simulations, []
    search = actor.search

    def spy(params, states, key, reuse):
        out, tree = search(params, states, key, reuse)
        seen.append((np.asarray(reuse.keep), np.asarray(out.visit_counts.sum(axis=1))))
        return out, tree
    actor.search = spy
    actor.play(12)
    assert not seen[0][0].any()  # the first search has nothing to reuse
    assert all(keep.any() for keep, _ in seen[1:3])  # no tic-tac-toe game ends before its fifth ply
    for keep, root_visits in seen:
        assert np.all(root_visits[~keep] == sims) and np.all(root_visits[keep] > sims)
    assert len(records) >= 4
    for record in records:  # every move played was legal where it was played
        offsets = np.concatenate([[0], np.cumsum(record.num_legal)])
        for ply, action in enumerate(record.actions):
            assert action in record.legal_actions[offsets[ply]:offsets[ply + 1]]
    actor.version += 1  # as when the parameter store hands over newer weights
    seen.clear()
    actor.play(1)
    assert not seen[0][0].any()


def test_match_play_searches_each_position_afresh():
    """A network trained with tree reuse records it in its search config: an arena agent searches the
    position it is given, so it plays with reuse off (the in-run evaluator plays the same config:
    tests/test_evaluation.py)."""
    from arena.agents.network import search_config
    recorded = {"search": {"policy": "gumbel", "num_simulations": 24, "reuse_tree": True}}
    played = search_config(recorded)
    assert played.reuse_tree is False and played.num_simulations == 24
    game = games.make("connect_four")
    out = make_search(game, random_network(game), played)(None, random_states(game, 2, 2, 0), jax.random.PRNGKey(0))
    assert out.action.shape == (2,)  # a SearchOutput, not a (SearchOutput, tree) pair
