"""Batched games of a searched network against one opponent, for any pgx game (the in-run evaluator).

    starts = start_states(game, openings=book_boards, count=10, key=key)   # P start positions
    games = play_gauntlet(game, network_move, opponent, starts, key, max_plies=300)  # 2P GauntletGames

Each start position is played twice, the network taking the side to move in one game and the other
side in the second, so at every ply exactly one game of each pair has the network to move: the
network searches P states and the opponent answers in P states, one fixed-shape batch each (no
recompilation as games end). Finished games stay finished (pgx steps them as no-ops).

A `Mover` picks actions for a batch of states: `search_mover` (a batched search with given variables:
the evaluated network or an earlier one), `policy_mover` (the network's raw policy, no search),
`random_mover`, or `AgentMover` (any chess arena agent,
e.g. Stockfish, one python-chess board per game).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Literal, Protocol, Sequence

import jax
import jax.numpy as jnp
import numpy as np

Termination = Literal["rules", "max_plies"]


@dataclasses.dataclass(frozen=True)
class GauntletGame:
    """One finished game: the network's points and the moves from the start position."""

    start: int  # index of the start position
    network_first: bool  # the network had the move at the start (white in chess)
    score: float  # the network's points: 1, 0.5 or 0
    plies: int  # plies played from the start position
    actions: tuple[int, ...]  # pgx actions from the start position
    termination: Termination  # by the rules (mate, stalemate, repetition, ply cap of the game) or our cap


class Mover(Protocol):
    def __call__(self, states, games: np.ndarray, histories: Sequence[list[int]], key) -> np.ndarray:
        """states: a batch of P states to move; games [P]: their game indices; histories: every
        game's actions so far (indexed by game). Returns P pgx actions."""


def search_mover(search_fn: Callable, variables) -> Mover:
    """A batched search (search.make_search) with `variables`: its `action` per state."""
    def move(states, games, histories, key):
        return np.asarray(jax.device_get(search_fn(variables, states, key).action))
    return move


def greedy_policy(apply_fn: Callable) -> Callable:
    """apply_fn(variables, obs) -> NetworkOutput  ->  jitted (variables, states) -> [B] the legal
    action of highest policy logit (the raw policy, no search)."""
    @jax.jit
    def best(variables, states):
        logits = apply_fn(variables, states.observation).policy_logits
        return jnp.argmax(jnp.where(states.legal_action_mask, logits, -jnp.inf), axis=-1)
    return best


def policy_mover(apply_fn: Callable, variables) -> Mover:
    """The network's raw policy (greedy over the legal actions): what self-play taught it, without
    what the search adds."""
    best = greedy_policy(apply_fn)
    return lambda states, games, histories, key: np.asarray(best(variables, states))


def random_mover(states, games, histories, key) -> np.ndarray:
    """Uniform over the legal actions."""
    mask = states.legal_action_mask
    logits = jnp.where(mask, 0.0, -jnp.inf)
    return np.asarray(jax.random.categorical(key, logits, axis=-1))


class AgentMover:
    """A chess arena agent (arena/agents/agent.py) moving in batched pgx games, one board per game."""

    def __init__(self, agent, start_fens: Sequence[str]):
        """start_fens: the FEN of each game's start position (indexed by game)."""
        self.agent = agent
        self.start_fens = list(start_fens)
        self.boards: list = [None] * len(start_fens)
        self.synced: list[list[int]] = [[] for _ in start_fens]  # the actions each board has played

    def __call__(self, states, games, histories, key) -> np.ndarray:
        from games import chess_bridge
        out = np.zeros(len(games), np.int32)
        for i, g in enumerate(games):
            board = self._sync(int(g), histories[g])
            if board.is_game_over(claim_draw=False) or not any(board.legal_moves):
                continue  # a finished game in the batch: any action, it is ignored
            move, _ = self.agent.select(board)
            out[i] = chess_bridge.move_to_pgx_action(move, board.turn)
        return out

    def _sync(self, g: int, history: list[int]):
        """Game g's board after `history`; a history that does not extend the board's (the same
        mover in a new gauntlet) starts again from the start position."""
        import chess

        from games import chess_bridge
        done = self.synced[g]
        if self.boards[g] is None or list(history[:len(done)]) != done:
            self.boards[g], done = chess.Board(self.start_fens[g]), []
        board = self.boards[g]
        for action in history[len(done):]:
            board.push(chess_bridge.pgx_action_to_move(int(action), board))
        self.synced[g] = [int(a) for a in history]
        return board


def start_states(game, count: int, key, boards: Sequence | None = None, random_plies: int = 0):
    """`count` start positions: python-chess `boards` (chess openings, their move stacks kept for
    the history planes) or the initial position followed by `random_plies` uniform random plies."""
    if boards is not None:
        from games import chess_bridge
        states = [chess_bridge.board_to_state(b) for b in boards[:count]]
        return jax.tree.map(lambda *x: jnp.stack(x), *states)
    init_key, key = jax.random.split(key)
    states = game.init(jax.random.split(init_key, count))
    step = jax.jit(game.step)
    for _ in range(random_plies):
        key, sub = jax.random.split(key)
        actions = jax.random.categorical(sub, jnp.where(game.legal_mask(states), 0.0, -jnp.inf), axis=-1)
        states = step(states, jnp.where(game.terminal(states), 0, actions))
    return states


def _pair_up(states):
    """[P] states -> [2P]: every start twice, side by side (games 2i and 2i+1)."""
    return jax.tree.map(lambda x: jnp.repeat(x, 2, axis=0), states)


def _movers(to_move: np.ndarray, network_player: np.ndarray, done: np.ndarray):
    """Per pair, the game where the network moves and the game where the opponent moves (either of
    a pair once the other game is finished; a finished game's action is ignored)."""
    net_turn = (to_move == network_player).reshape(-1, 2)
    live = ~done.reshape(-1, 2)
    first_is_net = np.where(live[:, 0], net_turn[:, 0], ~net_turn[:, 1])
    base = 2 * np.arange(net_turn.shape[0])
    network = base + np.where(first_is_net, 0, 1)
    return network, base + np.where(first_is_net, 1, 0)


def play_gauntlet(game, network: Mover, opponent: Mover, starts, key,
                  max_plies: int = 0) -> list[GauntletGame]:
    """Plays every start position twice (network first, then opponent first); `max_plies` > 0 ends
    longer games as draws. Returns the 2P games in order (2i: network first from start i)."""
    states = _pair_up(starts)
    num_games = int(game.current_player(states).shape[0])
    first = np.asarray(game.current_player(states))
    network_player = np.where(np.arange(num_games) % 2 == 0, first, 1 - first)
    step = jax.jit(game.step)
    take = jax.jit(lambda s, idx: jax.tree.map(lambda x: x[idx], s))
    status = jax.jit(lambda s: (game.current_player(s), game.terminal(s), game.rewards(s), s.terminated))
    histories: list[list[int]] = [[] for _ in range(num_games)]
    score = np.full(num_games, 0.5)
    ended_by: list[Termination] = ["max_plies"] * num_games
    done = np.zeros(num_games, bool)
    plies = 0
    while not done.all() and (max_plies <= 0 or plies < max_plies):
        to_move = np.asarray(game.current_player(states))
        net_idx, opp_idx = _movers(to_move, network_player, done)
        key, k1, k2 = jax.random.split(key, 3)
        actions = np.zeros(num_games, np.int32)
        actions[net_idx] = network(take(states, jnp.asarray(net_idx)), net_idx, histories, k1)
        actions[opp_idx] = opponent(take(states, jnp.asarray(opp_idx)), opp_idx, histories, k2)
        states = step(states, jnp.asarray(actions))
        for g in np.flatnonzero(~done):
            histories[g].append(int(actions[g]))
        _, finished, rewards, by_rules = jax.device_get(status(states))
        for g in np.flatnonzero(finished & ~done):
            score[g] = (1.0 + float(rewards[g, network_player[g]])) / 2
            ended_by[g] = "rules"
        done |= np.asarray(finished)
        plies += 1
    return [GauntletGame(start=g // 2, network_first=g % 2 == 0, score=float(score[g]),
                         plies=len(histories[g]), actions=tuple(histories[g]), termination=ended_by[g])
            for g in range(num_games)]
