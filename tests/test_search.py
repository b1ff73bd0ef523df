"""search/: PUCT against a plain-Python reference, legal slots at every depth, noise, outputs."""
import math
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
    config = SearchConfig(num_simulations=120, root_noise=False, temperature_plies=0,
                          q_transform=q_transform)
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
