"""The search of a pgx game: `make_search` (batched, jitted MCTS with a small legal-slot action axis),
the game as mctx's model of it (`make_recurrent_fn`), and the root's summary (`SearchOutput`).

The tree's action axis is the legal-move slot (see search/slots.py), so a chess tree holds
[B, nodes, 218] edges instead of [B, nodes, 4672]. Each tree node's embedding is the pgx state
(without its observation, recomputed by pgx on every step) plus its slot -> action table.

Two-player sign convention (mctx): an edge's reward is the mover's reward, node values are from
the side to move at that node, and discount is -1 between plies. A terminal node (checkmate,
stalemate, any rule draw, the ply cap) has value 0 and discount 0, so its edge is worth exactly the
game's reward to the mover: terminal nodes are valued by the rules, never by the network.

Forced results (`SearchConfig.win_check`, games/immediate_wins.py): a new node whose side to move
has a move that wins at once (chess: a mate in 1) is a certain win for that side without the
network, whether or not that move has any prior: its edge gets reward -1 (for the mover into it)
and discount 0, and its prior keeps only the winning moves. With `certainty_propagation` the
backup turns such edges into proven wins and losses further up (mate in 2, 3, ...), and the root
plays a proven win (and never a proven loss while another move is not one).
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import mctx

from games import immediate_wins
from search import noise, selection, slots, symmetric, tree_search
from search.config import SearchConfig

# evaluate(params, observations [B, *obs]) -> (policy_logits [B, num_actions], value [B] in
# [-1, 1] for the side to move), or an object with `.policy_logits` and `.value` (models'
# NetworkOutput).
Evaluate = Callable[[Any, jax.Array], Any]


class SearchOutput(NamedTuple):
    """Result of one batched search. W = game.spec.max_legal_actions slots; B positions.

    action:        [B] int32 pgx action to play; sampled from visit_counts ** (1 / temperature)
                   while ply < temperature_plies, then the most visited (PUCT) / the best of the
                   most visited by prior + completed Q (Gumbel). -1 if the root is terminal.
    greedy_action: [B] int32 the move past the temperature's plies, whatever the ply (self-play's
                   sparring games play it: actors.sparring_fraction).
    slot_actions:  [B, W] int32 pgx action of each slot (legal moves in increasing id), -1 = empty.
    visit_counts:  [B, W] int32 root visits per slot.
    policy_target: [B, W] float32 training target (config.target): "visits" the visit distribution;
                   "completed_q" the improved policy softmax(prior + completed Q) (Danihelka et
                   al.; Gumbel's own). 0 in empty slots.
    child_q:       [B, W] float32 Q of each root move from the ROOT player's view, in [-1, 1], for
                   visited moves; unvisited and empty slots hold 0.
    root_value:    [B] float32 search value of the root for its side to move.
    prior_logits:  [B, W] float32 network root logits per slot (before noise), max-shifted to 0;
                   empty slots hold slots.EMPTY_LOGIT.
    root_certain:  [B] bool the root value is exact (a proven win, or every move's result certain):
                   +1 / -1 a forced win / loss for the side to move, 0 a certain draw.
    """

    action: jax.Array
    greedy_action: jax.Array
    slot_actions: jax.Array
    visit_counts: jax.Array
    policy_target: jax.Array
    child_q: jax.Array
    root_value: jax.Array
    prior_logits: jax.Array
    root_certain: jax.Array


def scatter_slots(values: jax.Array, slot_actions: jax.Array, num_actions: int, fill=0) -> jax.Array:
    """Slot array [B, W] (e.g. policy_target) -> [B, num_actions] by pgx action; `fill` elsewhere."""
    return slots.scatter(values, slot_actions, num_actions, fill)


def network_fn(evaluate: Evaluate):
    """Normalises `evaluate`'s output to (logits [B, A] float32, value [B] float32)."""

    def run(params, observations):
        out = evaluate(params, observations)
        logits, value = (out.policy_logits, out.value) if hasattr(out, "policy_logits") else out
        return logits.astype(jnp.float32), value.reshape(-1).astype(jnp.float32)

    return run


class Node(NamedTuple):
    """A tree node's embedding: the pgx state without observation, and its slot table [B, W]."""

    state: Any
    slot_actions: jax.Array


def _slim(state):
    return state.replace(observation=jnp.zeros(state.observation.shape[:1] + (0,),
                                               state.observation.dtype))


def _unslim(state, observation_shape):
    # pgx's step recomputes the observation; a zero placeholder of the right shape is enough.
    obs = jnp.zeros(state.observation.shape[:1] + tuple(observation_shape), state.observation.dtype)
    return state.replace(observation=obs)


def legal_slots(game, states) -> jax.Array:
    """[B, W] slot table of states; terminal states (pgx marks all actions legal there) get none."""
    mask = game.legal_mask(states) & ~game.terminal(states)[:, None]
    return slots.slot_actions(mask, game.spec.max_legal_actions)


def make_recurrent_fn(game, evaluate: Evaluate, config: SearchConfig | None = None) -> mctx.RecurrentFn:
    """mctx recurrent fn over slots: (params, key, slot [B], Node) -> (RecurrentFnOutput, Node)."""
    net = network_fn(evaluate)
    check_wins = config is not None and config.win_check == "tree"

    def recurrent_fn(params, rng_key, slot, node: Node):
        del rng_key
        state = _unslim(node.state, game.spec.observation_shape)
        batch = jnp.arange(slot.shape[0])
        action = node.slot_actions[batch, slot]
        parent_over = game.terminal(state)
        mover = game.current_player(state)
        # Below a terminal node nothing happens: reward 0 and (child terminal) discount 0, whatever
        # pgx does with the placeholder action 0.
        child = game.step(state, jnp.where(action == slots.EMPTY, 0, action))
        reward = jnp.where(parent_over, 0.0, game.rewards(child)[batch, mover])
        over = game.terminal(child) | parent_over
        logits, value = net(params, game.observe(child))
        child_slots = slots.slot_actions(game.legal_mask(child) & ~over[:, None],
                                         game.spec.max_legal_actions)
        prior = slots.prior_logits(logits, child_slots)
        certain = over
        if check_wins:  # the child's mover wins at once: a certain loss for this edge's mover
            wins = immediate_wins.immediate_wins(game, child, child_slots, config.win_check_max_checks)
            lost = jnp.any(wins, axis=1) & ~over
            reward = jnp.where(lost, -1.0, reward)
            prior = jnp.where(lost[:, None] & ~wins, slots.EMPTY_LOGIT, prior)
            certain = over | lost
            if config.win_check_max_replies:  # few replies, each punished at once: a certain win
                won = immediate_wins.forced_losses(game, child, child_slots, config.win_check_max_replies,
                                                   config.win_check_max_checks) & ~certain
                reward = jnp.where(won, 1.0, reward)
                certain = certain | won
        out = mctx.RecurrentFnOutput(
            reward=reward.astype(jnp.float32),
            discount=jnp.where(certain, 0.0, -1.0).astype(jnp.float32),
            prior_logits=prior,
            value=jnp.where(certain, 0.0, value))
        return out, Node(_slim(child), child_slots)

    return recurrent_fn


def make_search_tree(game, evaluate: Evaluate, config: SearchConfig):
    """Un-jitted `fn(params, states, key) -> (mctx.Tree [B, nodes, W], root Node, network prior)`.

    For analysis and tests; `make_search` is what players use.
    """
    if config.symmetric_eval:
        transforms = game.symmetries
        if len(transforms) < 2:
            raise ValueError(f"search.symmetric_eval: {game.name} has no board symmetries (games/symmetry.py); "
                             "set search.symmetric_eval=false")
        evaluate = symmetric.averaged(network_fn(evaluate), transforms)  # network_fn of it is the identity
    net = network_fn(evaluate)
    recurrent_fn = make_recurrent_fn(game, evaluate, config)
    root_select, interior_select = selection.selection_fns(config)
    alpha = game.spec.dirichlet_alpha if config.dirichlet_alpha is None else config.dirichlet_alpha

    def run(params, states, key, reuse: Reuse | None = None):
        noise_key, gumbel_key, search_key = jax.random.split(key, 3)
        logits, value = net(params, game.observe(states))
        over = game.terminal(states)
        root_slots = legal_slots(game, states)
        prior = slots.prior_logits(logits, root_slots)
        root_prior = prior
        extra = None
        if config.policy == "puct" and config.root_noise:
            root_prior = noise.add_dirichlet(noise_key, prior, alpha=alpha,
                                             fraction=config.dirichlet_fraction)
        if config.policy == "gumbel":
            gumbel = config.gumbel_scale * jax.random.gumbel(gumbel_key, prior.shape)
            extra = mctx.GumbelMuZeroExtraData(root_gumbel=gumbel)
        root = mctx.RootFnOutput(prior_logits=root_prior, value=jnp.where(over, 0.0, value),
                                 embedding=Node(_slim(states), root_slots))
        invalid = (root_slots == slots.EMPTY).astype(jnp.float32)
        start, max_depth = None, config.max_depth
        if config.reuse_tree:  # grow the previous search's subtree of the move played
            capacity = reuse_capacity(config)
            zeros = jnp.zeros(prior.shape, jnp.int32)
            extra = None if extra is None else ReusedGumbel(extra.root_gumbel, zeros)
            start = tree_search.new_tree(root, capacity, invalid, extra)
            if reuse is not None:
                start = tree_search.reroot(reuse.tree, reuse.slot, reuse.keep, start,
                                           capacity - config.num_simulations)
                if extra is not None:  # sequential halving counts this search's visits only
                    start = start.replace(extra_data=extra._replace(
                        root_start_visits=start.children_visits[:, tree_search.Tree.ROOT_INDEX]))
            max_depth = max_depth or capacity
        tree = tree_search.search(
            params, search_key, root=root, recurrent_fn=recurrent_fn,
            root_action_selection_fn=root_select, interior_action_selection_fn=interior_select,
            num_simulations=config.num_simulations, max_depth=max_depth,
            invalid_actions=invalid, extra_data=extra,
            certainty=config.certainty_propagation,
            stop_at_certain=config.certainty_propagation and config.stop_at_certain, start=start)
        return tree, root.embedding, prior

    return run


class Reuse(NamedTuple):
    """The previous search's tree and the move each game played from its root (`search.reuse_tree`)."""

    tree: Any  # mctx.Tree [B, reuse_capacity(config), W] as the previous search left it
    slot: jax.Array  # [B] int32 root slot of the move played
    keep: jax.Array  # [B] bool False: start afresh (a new game, another move than a slot's, new weights)


class ReusedGumbel(NamedTuple):
    """Gumbel MuZero's root data with the root visits a reused tree started with ([B, W])."""

    root_gumbel: jax.Array
    root_start_visits: jax.Array


def reuse_capacity(config: SearchConfig) -> int:
    """Nodes of a reused search's tree: the root, at most num_simulations reused, num_simulations new."""
    return 2 * config.num_simulations + 1


def make_search(game, evaluate: Evaluate, config: SearchConfig, return_tree: bool = False):
    """Jitted `fn(params, states, key) -> SearchOutput` for batched pgx `states` of `game`.

    `evaluate(params, observations [B, *obs])` -> (policy_logits [B, game.num_actions], value [B]
    in [-1, 1] for the side to move); a models/ NetworkOutput is accepted too.
    return_tree=True: fn returns (SearchOutput, mctx.Tree [B, nodes, W]) for analysis, tests and tree
    reuse (`config.reuse_tree`: fn also takes `Reuse(tree, played_slot, keep)` back).
    """
    run_tree = make_search_tree(game, evaluate, config)

    def fn(params, states, key, reuse: Reuse | None = None):
        tree_key, act_key = jax.random.split(key)
        tree, root, prior = run_tree(params, states, tree_key, reuse)
        out = _summarise(game, config, tree, root, prior, states, act_key)
        return (out, tree) if return_tree else out

    return jax.jit(fn)


class RootCertainty(NamedTuple):
    """What the root knows for sure, per slot [B, W]: proven won / lost moves, exact values."""

    won: jax.Array
    lost: jax.Array
    certain: jax.Array
    value: jax.Array


def root_certainty(game, config: SearchConfig, tree, root: Node, states) -> RootCertainty:
    """Root edges that are certain (terminal or proven, see search/tree_search.py) + immediate wins."""
    edges = lambda x: x[:, tree.ROOT_INDEX]
    legal = root.slot_actions != slots.EMPTY
    certain = legal & (edges(tree.children_index) != tree.UNVISITED) & (edges(tree.children_discounts) == 0)
    value = jnp.where(certain, edges(tree.children_rewards), 0.0)
    won = certain & (value > 0)
    if config.win_check != "none":
        won |= immediate_wins.immediate_wins(game, states, root.slot_actions, config.win_check_max_checks)
    if config.win_check == "tree" and config.win_check_max_replies:  # forcing lines, visited or not
        won |= immediate_wins.wins_in_two(game, states, root.slot_actions, config.win_check_max_replies,
                                          config.win_check_max_checks)
    certain |= won
    value = jnp.where(won, 1.0, value)
    return RootCertainty(won=won, lost=certain & (value < 0), certain=certain, value=value)


def _summarise(game, config, tree, root: Node, prior, states, key) -> SearchOutput:
    """Root statistics -> SearchOutput; a proven win is played, a proven loss avoided if possible."""
    rows = jnp.arange(prior.shape[0])
    visits = tree.children_visits[:, tree.ROOT_INDEX]
    q = tree.qvalues(jnp.full(rows.shape, tree.ROOT_INDEX))
    empty = root.slot_actions == slots.EMPTY
    sure = root_certainty(game, config, tree, root, states)
    any_won = jnp.any(sure.won, axis=1)
    avoid = sure.lost & ~jnp.all(sure.lost | empty, axis=1, keepdims=True)
    explore = game.plies(states) < config.temperature_plies
    # Gumbel's improved policy (Gumbel's target always, so its move choice below reads `completed` too);
    # a PUCT root's prior is taken without its noise
    if config.target == "completed_q":
        completed = jax.vmap(selection.gumbel_qtransform(config), in_axes=(0, None))(tree, tree.ROOT_INDEX)
        target = jax.nn.softmax(jnp.where(empty, slots.EMPTY_LOGIT, prior + completed))
    else:
        completed = None  # PUCT's visit target: its move choice reads visits alone
        target = visits / jnp.maximum(jnp.sum(visits, axis=1, keepdims=True), 1)
    slot, greedy_slot = _move_slots(config, tree, visits, completed, avoid, empty, explore, key)
    # A proven win: the most visited winning move (the prior breaks ties); its target is certain.
    win_slot = jnp.argmax(jnp.where(sure.won, visits + jax.nn.softmax(prior), -jnp.inf), axis=1)
    slot = jnp.where(any_won, win_slot, slot)
    greedy_slot = jnp.where(any_won, win_slot, greedy_slot)
    won_target = sure.won / jnp.maximum(jnp.sum(sure.won, axis=1, keepdims=True), 1)
    pruned = jnp.where(avoid, 0.0, target)
    pruned = pruned / jnp.maximum(jnp.sum(pruned, axis=1, keepdims=True), 1e-9)
    target = jnp.where(any_won[:, None], won_target, pruned)
    all_certain = jnp.all(sure.certain | empty, axis=1) & ~jnp.all(empty, axis=1)
    exact = jnp.max(jnp.where(sure.certain, sure.value, -jnp.inf), axis=1)
    root_value = jnp.where(any_won, 1.0, jnp.where(all_certain, exact, tree.node_values[:, tree.ROOT_INDEX]))
    terminal = jnp.all(empty, axis=1)
    action = jnp.where(terminal, -1, root.slot_actions[rows, slot])
    greedy = jnp.where(terminal, -1, root.slot_actions[rows, greedy_slot])
    return SearchOutput(
        action=action.astype(jnp.int32),
        greedy_action=greedy.astype(jnp.int32),
        slot_actions=root.slot_actions,
        visit_counts=visits,
        policy_target=jnp.where(empty, 0.0, target).astype(jnp.float32),
        child_q=jnp.where(sure.certain, sure.value, jnp.where(visits > 0, q, 0.0)),
        root_value=root_value,
        prior_logits=prior,
        root_certain=any_won | all_certain)


def _move_slots(config, tree, visits, completed, avoid, empty, explore, key) -> tuple[jax.Array, jax.Array]:
    """[B] the root slot to play and [B] the one past the temperature's plies. PUCT: sampled from the
    visits while `explore`, else the most visited; Gumbel: the best of the most visited by prior +
    completed Q, plus the root's Gumbel noise while exploring."""
    if config.policy == "puct":
        logits = jnp.where((visits > 0) & ~avoid,
                           jnp.log(jnp.maximum(visits, 1)) / config.temperature, -jnp.inf)
        greedy = jnp.argmax(jnp.where(avoid, -1, visits), axis=1)
        return jnp.where(explore, jax.random.categorical(key, logits), greedy), greedy
    logits = tree.children_prior_logits[:, tree.ROOT_INDEX]
    searched = visits  # this search's visits: a reused root's earlier ones are not its halving's
    if isinstance(tree.extra_data, ReusedGumbel):
        searched = visits - tree.extra_data.root_start_visits
    open_visits = jnp.where(avoid | empty, -1, searched)
    most = open_visits == jnp.max(open_visits, axis=1, keepdims=True)
    score = jnp.where(most & ~empty, logits + completed, -jnp.inf)
    greedy = jnp.argmax(score, axis=1)
    noisy = jnp.argmax(score + jnp.where(explore[:, None], tree.extra_data.root_gumbel, 0.0), axis=1)
    return noisy, greedy
