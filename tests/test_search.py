"""search/: PUCT against a plain-Python reference, legal slots at every depth, noise, outputs."""
import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games
import search
from search import SearchConfig, noise, slots

TTT = games.make("tic_tac_toe")
LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def zero_network(game):
    """Uniform prior, value 0."""
    return lambda params, obs: (jnp.zeros((obs.shape[0], game.num_actions)), jnp.zeros(obs.shape[0]))


# ------------------------------------------------------------------------------------------
# A plain-Python AlphaZero PUCT on tic-tac-toe, written from the rules and the formulas:
#   score(a) = Qn(s,a) + C(s) P(s,a) sqrt(N(s)) / (1 + N(s,a)),
#   C(s) = log((1 + N(s) + c_base) / c_base) + c_init,
# Qn = Q from the side to move, min-max normalised over V(s) and the visited Q (unvisited -> 0),
# or (min_max) (Q + 1) / 2 with unvisited 0. A node's value is the running mean of its network
# value (0) and the values backed up through it; terminal nodes are worth 0 to the side to move
# and their edge carries the mover's reward. Revisiting a terminal node adds a visit and backs up
# the same reward (mctx expands a dummy child under it; we mirror that node for node).
# Arithmetic is float32 like the search's (XLA: v * n + x fused): with a zero network, running means leave ~1e-9
# residues that the min-max normalisation (epsilon 1e-8) turns into real score differences.
# ------------------------------------------------------------------------------------------
f32 = np.float32


def fma(a, b, c):
    """float32 a * b + c rounded once: XLA on CPU fuses the running mean's multiply-add."""
    return f32(np.float64(a) * np.float64(b) + np.float64(c))
def winner_after(board, cell, mark):
    board = board[:cell] + (mark,) + board[cell + 1:]
    won = any(all(board[i] == mark for i in line) for line in LINES)
    return board, won


class RefNode:
    def __init__(self, board, mark, terminal):
        self.board, self.mark, self.terminal = board, mark, terminal
        self.visits, self.value = 1, f32(0.0)
        self.children = {}  # slot -> (reward, discount, RefNode)

    def legal(self):
        return [] if self.terminal else [c for c in range(9) if self.board[c] is None]

    def q(self, slot):
        reward, discount, child = self.children[slot]
        return reward + discount * child.value

    def select(self, c_base, c_init, q_transform):
        legal = self.legal()
        if not legal:
            return 0  # terminal: mctx's argmax over an all-masked row
        prior = f32(1.0) / f32(len(legal))
        qs = {s: self.q(s) for s in range(len(legal)) if s in self.children}
        if q_transform == "min_max":
            norm = {s: (q - f32(-1.0)) / f32(2.0) for s, q in qs.items()}
        else:
            lo = min([self.value] + list(qs.values()))
            hi = max([self.value] + list(qs.values()))
            norm = {s: (q - lo) / max(hi - lo, f32(1e-8)) for s, q in qs.items()}
        c = f32(c_init) + np.log(f32((self.visits + c_base + 1.0) / c_base))
        best, best_score = None, -np.inf
        for s in range(len(legal)):
            n = self.children[s][2].visits if s in self.children else 0
            explore = np.sqrt(f32(self.visits)) * c * prior / f32(1 + n)
            score = norm.get(s, f32(0.0)) + explore
            if score > best_score:  # first maximum, like jnp.argmax
                best, best_score = s, score
        return best

    def expand(self, slot):
        if self.terminal:
            return f32(0.0), f32(0.0), RefNode(self.board, self.mark, True)
        board, won = winner_after(self.board, self.legal()[slot], self.mark)
        over = won or all(c is not None for c in board)
        return f32(won), f32(0.0 if over else -1.0), RefNode(board, 1 - self.mark, over)


def reference_search(board, mark, num_simulations, c_base, c_init, q_transform):
    root = RefNode(board, mark, False)
    for _ in range(num_simulations):
        node, path = root, []
        while True:
            slot = node.select(c_base, c_init, q_transform)
            path.append((node, slot))
            if slot not in node.children:
                node.children[slot] = node.expand(slot)
                break
            node = node.children[slot][2]
        value = node.children[slot][2].value
        for parent, slot in reversed(path):
            reward, discount, _ = parent.children[slot]
            value = reward + discount * value
            parent.value = fma(parent.value, parent.visits, value) / f32(parent.visits + 1)
            parent.visits += 1
    return root


def reference_nodes(root):
    """{path of slots: (visits, value)} over the whole reference tree."""
    out, stack = {}, [((), root)]
    while stack:
        path, node = stack.pop()
        out[path] = (node.visits, node.value)
        stack += [(path + (s,), child) for s, (_, _, child) in node.children.items()]
    return out


def tree_nodes(tree, b):
    """{path of slots: (visits, value)} over the used nodes of game b of an mctx Tree."""
    parents, actions = np.asarray(tree.parents[b]), np.asarray(tree.action_from_parent[b])
    visits, values = np.asarray(tree.node_visits[b]), np.asarray(tree.node_values[b])
    out = {}
    for node in range(parents.shape[0]):
        if visits[node] == 0:
            continue
        path, n = [], node
        while parents[n] != -1:
            path.append(int(actions[n]))
            n = parents[n]
        out[tuple(reversed(path))] = (int(visits[node]), float(values[node]))
    return out


def random_ttt_positions(count, seed):
    """Lists of cells played from the start, for non-finished positions."""
    rng, out = random.Random(seed), [[]]
    while len(out) < count:
        board, mark, moves = (None,) * 9, 0, []
        for _ in range(rng.randrange(1, 6)):
            cell = rng.choice([c for c in range(9) if board[c] is None])
            board, won = winner_after(board, cell, mark)
            if won:
                break
            moves.append(cell)
            mark = 1 - mark
        else:
            out.append(moves)
    return out


@pytest.mark.parametrize("q_transform", ["parent_and_siblings", "min_max"])
def test_puct_matches_python_reference_node_for_node(q_transform):
    positions = random_ttt_positions(6, seed=1)
    states = TTT.init(jax.random.split(jax.random.PRNGKey(0), len(positions)))
    for ply in range(max(len(p) for p in positions)):
        actions = jnp.array([p[ply] if ply < len(p) else 0 for p in positions])
        stepped = TTT.step(states, actions)
        live = jnp.array([ply < len(p) for p in positions])
        states = jax.tree.map(lambda a, b: jnp.where(
            live.reshape((-1,) + (1,) * (a.ndim - 1)), b, a), states, stepped)
    # Plain AlphaZero, as the reference implements it: no forced-result shortcuts.
    config = SearchConfig(num_simulations=120, root_noise=False, temperature_plies=0,
                          q_transform=q_transform, win_check="none", certainty_propagation=False)
    run = jax.jit(search.make_search(TTT, zero_network(TTT), config, return_tree=True))
    out, tree = run(None, states, jax.random.PRNGKey(0))
    for b, moves in enumerate(positions):
        board, mark = (None,) * 9, 0
        for cell in moves:
            board, _ = winner_after(board, cell, mark)
            mark = 1 - mark
        ref = reference_search(board, mark, config.num_simulations, config.pb_c_base,
                               config.pb_c_init, q_transform)
        ours, theirs = tree_nodes(tree, b), reference_nodes(ref)
        assert ours.keys() == theirs.keys(), f"position {moves}: different tree shapes"
        for path in theirs:
            assert ours[path][0] == theirs[path][0], f"position {moves} node {path}: visits"
            assert ours[path][1] == pytest.approx(theirs[path][1], abs=1e-5), f"{moves} {path}"
        legal = ref.legal()
        visits = [ref.children[s][2].visits if s in ref.children else 0 for s in range(len(legal))]
        np.testing.assert_array_equal(out.visit_counts[b, :len(legal)], visits)
        assert int(out.visit_counts[b, len(legal):].sum()) == 0
        np.testing.assert_array_equal(out.slot_actions[b, :len(legal)], legal)
        assert float(out.root_value[b]) == pytest.approx(ref.value, abs=1e-5)
        for s in ref.children:
            assert float(out.child_q[b, s]) == pytest.approx(ref.q(s), abs=1e-5)
        assert int(out.action[b]) == legal[int(np.argmax(visits))]  # greedy: temperature_plies=0


def test_config_rejects_bad_values_with_the_field_name():
    for field, value in [("policy", "alphabeta"), ("q_transform", "x"), ("num_simulations", 0),
                         ("dirichlet_fraction", 1.5), ("temperature", 0.0), ("dirichlet_alpha", -1.0),
                         ("value_scale", -1.0), ("value_scale", 0.0), ("pb_c_base", 0.0), ("pb_c_init", -1.0),
                         ("maxvisit_init", -1.0), ("gumbel_scale", -0.5), ("fpu_reduction", -0.1)]:
        with pytest.raises(ValueError, match=field):
            SearchConfig(**{field: value})
    assert SearchConfig(gumbel_scale=0.0, pb_c_init=0.0).gumbel_scale == 0.0  # deterministic play, pure prior


@pytest.mark.parametrize("policy", ["puct", "gumbel"])
def test_every_node_prior_is_the_softmax_of_the_network_logits_over_its_legal_moves(policy):
    """Every expanded node's prior (root and interior) is softmax(network logits) over its legal
    moves, computed here with numpy from the network's logits."""
    logits = np.linspace(-3.0, 3.0, TTT.num_actions).astype(np.float32)  # a sharp prior: cell 8 first
    net = lambda params, obs: (jnp.broadcast_to(jnp.asarray(logits), (obs.shape[0], TTT.num_actions)),
                               jnp.zeros(obs.shape[0]))
    states = TTT.init(jax.random.split(jax.random.PRNGKey(0), 2))
    states = TTT.step(states, jnp.array([4, 0]))  # one mark placed: 8 legal moves at the root
    config = SearchConfig(policy=policy, num_simulations=24, root_noise=False, win_check="none")
    out, tree = jax.jit(search.make_search(TTT, net, config, return_tree=True))(None, states, jax.random.PRNGKey(1))
    visits, actions = np.asarray(tree.node_visits), np.asarray(tree.embeddings.slot_actions)
    priors = np.asarray(tree.children_prior_logits)
    softmax = lambda x: np.exp(x) / np.exp(x).sum()  # noqa: E731
    checked = 0
    for b, node in zip(*np.nonzero(visits)):
        legal = actions[b, node][actions[b, node] != slots.EMPTY]
        if legal.size == 0:  # a finished game
            continue
        np.testing.assert_allclose(softmax(priors[b, node, :legal.size]), softmax(logits[legal]), rtol=1e-5)
        checked += 1
    assert checked > 10
    legal = np.asarray(out.slot_actions[0])[:8]
    np.testing.assert_allclose(softmax(np.asarray(out.prior_logits[0, :8])), softmax(logits[legal]), rtol=1e-5)


def test_slot_tables_gather_and_scatter_round_trip():
    mask = jnp.array([[False, True, False, True, True], [False] * 5])
    table = slots.slot_actions(mask, 4)
    np.testing.assert_array_equal(table, [[1, 3, 4, -1], [-1, -1, -1, -1]])
    values = jnp.arange(10.0).reshape(2, 5)
    np.testing.assert_array_equal(slots.gather(values, table, -7.0), [[1, 3, 4, -7], [-7] * 4])
    back = search.scatter_slots(jnp.array([[0.1, 0.2, 0.7, 9.0], [9.0] * 4]), table, 5)
    np.testing.assert_allclose(back, [[0, 0.1, 0, 0.2, 0.7], [0] * 5])
    prior = slots.prior_logits(values, table)
    np.testing.assert_array_equal(prior[0, :3], [-3.0, -1.0, 0.0])
    assert bool(slots.is_empty(prior[0, 3])) and bool(slots.is_empty(prior[1]).all())


def test_dirichlet_noise_touches_legal_slots_only():
    table = jnp.array([[0, 4, 6, -1, -1, -1], [2, -1, -1, -1, -1, -1]])
    prior = slots.prior_logits(jnp.zeros((2, 9)), table)
    noisy = noise.add_dirichlet(jax.random.PRNGKey(0), prior, alpha=0.3, fraction=0.25)
    empty = np.asarray(table) == -1
    np.testing.assert_array_equal(np.asarray(noisy)[empty], slots.EMPTY_LOGIT)
    probs = np.asarray(jax.nn.softmax(noisy))
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-6)
    assert probs[0, :3].min() >= 0.75 / 3 - 1e-6 and np.abs(probs[0, :3] - 1 / 3).max() > 1e-3
    assert probs[1, 0] == pytest.approx(1.0)  # one legal move keeps all the mass


def test_temperature_samples_in_proportion_to_visits():
    states = TTT.init(jax.random.split(jax.random.PRNGKey(0), 512))
    base = dict(num_simulations=24, root_noise=False)
    sample = search.make_search(TTT, zero_network(TTT), SearchConfig(temperature_plies=30, **base))
    out = sample(None, states, jax.random.PRNGKey(1))
    visits = np.asarray(out.visit_counts[0])
    assert (np.asarray(out.visit_counts) == visits).all()  # same position, no noise: same tree
    freq = np.bincount(np.asarray(out.action), minlength=9) / 512
    np.testing.assert_allclose(freq, visits / visits.sum(), atol=0.07)
    np.testing.assert_allclose(out.policy_target[0], visits / visits.sum(), rtol=1e-6)


@pytest.mark.parametrize("temperature_plies", [1, 2])
def test_sampling_stops_at_temperature_plies_then_the_most_visited_move_is_played(temperature_plies):
    """One batch across the boundary: 256 games at ply 1 and 256 at ply 2 (each group one position,
    so one tree). A group below temperature_plies samples (several moves, in proportion to visits);
    a group at or past it plays its most visited move in every game; `greedy_action` is that move in both."""
    states = TTT.init(jax.random.split(jax.random.PRNGKey(0), 512))
    states = TTT.step(states, jnp.full(512, 4))  # ply 1: the centre taken
    at_ply_2 = TTT.step(states, jnp.zeros(512, jnp.int32))  # ply 2: and a corner
    two = jnp.arange(512) >= 256
    states = jax.tree.map(lambda a, b: jnp.where(two.reshape((-1,) + (1,) * (a.ndim - 1)), b, a), states, at_ply_2)
    config = SearchConfig(num_simulations=24, root_noise=False, temperature_plies=temperature_plies)
    out = search.make_search(TTT, zero_network(TTT), config)(None, states, jax.random.PRNGKey(1))
    actions, visits, slots = (np.asarray(x) for x in (out.action, out.visit_counts, out.slot_actions))
    for group, ply in ((slice(0, 256), 1), (slice(256, 512), 2)):
        v, legal = visits[group][0], slots[group][0]
        assert (visits[group] == v).all() and (v > 0).sum() >= 2  # one tree, more than one move searched
        assert (np.asarray(out.greedy_action)[group] == legal[np.argmax(v)]).all()  # greedy at every ply
        if ply < temperature_plies:
            freq = np.array([(actions[group] == a).mean() for a in legal[v > 0]])
            np.testing.assert_allclose(freq, v[v > 0] / v.sum(), atol=0.1)
            assert len(set(actions[group].tolist())) >= 3
        else:
            assert (actions[group] == legal[np.argmax(v)]).all(), (ply, np.unique(actions[group]))


@pytest.mark.parametrize("policy", ["puct", "gumbel"])
def test_no_empty_slot_visited_at_any_depth(policy):
    """connect_four random positions: every visited edge of every node is a legal move there."""
    game = games.make("connect_four")
    @jax.jit  # one compile, not one per op and ply
    def random_ply(states, sub, ply):
        nxt = game.step(states, jax.random.categorical(sub, jnp.where(game.legal_mask(states), 0.0, -jnp.inf)))
        stop = game.terminal(nxt) | (jnp.arange(48) % 30 < ply)
        return jax.tree.map(lambda a, b: jnp.where(stop.reshape((-1,) + (1,) * (a.ndim - 1)), a, b), states, nxt)

    states = game.init(jax.random.split(jax.random.PRNGKey(5), 48))
    key = jax.random.PRNGKey(6)
    for ply in range(30):  # random play; finished games stay as they are
        key, sub = jax.random.split(key)
        states = random_ply(states, sub, ply)
    config = SearchConfig(policy=policy, num_simulations=64, max_num_considered_actions=4)
    out, tree = search.make_search(game, zero_network(game), config, return_tree=True)(
        None, states, jax.random.PRNGKey(0))
    node_slots = np.asarray(tree.embeddings.slot_actions)
    node_masks = np.asarray(tree.embeddings.state.legal_action_mask)
    node_over = np.asarray(tree.embeddings.state.terminated | tree.embeddings.state.truncated)
    b, n, s = np.nonzero(np.asarray(tree.children_visits) > 0)
    live = ~node_over[b, n]
    assert np.asarray(tree.node_visits).max(axis=1).min() == 65
    parents, depth = np.asarray(tree.parents), np.zeros(tree.parents.shape, int)
    for node in range(1, depth.shape[1]):  # a node's parent was born before it
        depth[:, node] = depth[np.arange(48), np.maximum(parents[:, node], 0)] + 1
    assert depth[b[live], n[live]].max() >= 4  # edges deep in the tree were checked too
    actions = node_slots[b[live], n[live], s[live]]
    assert (actions != slots.EMPTY).all()
    assert node_masks[b[live], n[live], actions].all()
    legal = np.asarray(game.legal_mask(states))
    assert legal[np.arange(48), np.asarray(out.action)].all()
    target = np.asarray(out.policy_target)
    np.testing.assert_allclose(target.sum(axis=1), 1.0, rtol=1e-5)
    assert (target[np.asarray(out.slot_actions) == slots.EMPTY] == 0).all()

