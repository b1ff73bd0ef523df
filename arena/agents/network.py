"""Agents from a self-play network directory: `policy` (the prior alone) and `mcts` (search).

The MCTS agent searches as the network was trained: the SearchConfig recorded in the network
directory's metadata["search"] (self-play writes it; a directory without one gets SearchConfig's
defaults with 800 simulations), with no root noise and the most visited move played (temperature 0),
and then the spec's search keys on top (`mcts:net=DIR,policy=puct,sims=64`).

Both read pgx observations, so the pgx state of the game (with its history planes and repetition
counts) is kept in step with the board: a board that extends the last one by a few moves is
stepped forward; any other board is replayed from its root (games.chess_bridge.board_to_state).
JAX and the network load only when such an agent is built.
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Mapping

import chess

from arena.agents.agent import Agent, Limit, Option

# Simulation counts a time budget may choose from (each count compiles once, so keep few).
_SIM_GRID = (8, 16, 32, 64, 128, 256, 512, 800, 1600, 3200, 6400)
DEFAULT_SIMULATIONS = 800  # for a network directory that records no search config
ALL_PLIES = 1 << 30  # temperature_plies that samples every move


def _parse_temperature(value: str) -> float:
    try:
        t = float(value)
    except ValueError:
        raise ValueError(f"temperature must be a number, got '{value}'") from None
    if not (t >= 0 and math.isfinite(t)):
        raise ValueError(f"temperature must be >= 0, got '{value}'")
    return t


class _PgxTracker:
    """The pgx state of a board, advanced incrementally between calls of one game."""

    def __init__(self):
        from games import chess_bridge
        # The bridge's jitted step: board_to_state uses the same one, so it compiles once.
        self._step = chess_bridge._jitted_step()
        self._root_fen: str | None = None
        self._moves: list[chess.Move] = []
        self._state = None

    def state(self, board: chess.Board):
        import jax.numpy as jnp

        from games import chess_bridge
        root_fen = board.root().fen()
        stack = board.move_stack
        if (self._state is None or root_fen != self._root_fen or len(stack) < len(self._moves)
                or stack[:len(self._moves)] != self._moves):
            self._state = chess_bridge.board_to_state(board)
        else:
            replay = board.root()
            for m in self._moves:
                replay.push(m)
            for move in stack[len(self._moves):]:
                action = chess_bridge.move_to_pgx_action(move, replay.turn == chess.WHITE)
                self._state = self._step(self._state, jnp.int32(action))
                replay.push(move)
        self._root_fen, self._moves = root_fen, list(stack)
        return self._state


def search_config(metadata: Mapping[str, Any], overrides: Mapping[str, Any] | None = None,
                  where: str = "network directory"):
    """The SearchConfig an MCTS agent plays with: metadata["search"] (the fields the network was
    trained with) or the defaults with DEFAULT_SIMULATIONS, as `SearchConfig.for_play` makes it (the
    in-run evaluator's search too), then `overrides` (SearchConfig fields). ValueError names a bad key."""
    from configs import ConfigError, from_dict
    from search import SearchConfig
    recorded = metadata.get("search")
    try:
        base = (from_dict(SearchConfig, recorded, prefix="search") if recorded is not None
                else SearchConfig(num_simulations=DEFAULT_SIMULATIONS))
    except ConfigError as e:
        raise ValueError(f"{where}: recorded search config: {e}") from None
    try:
        return dataclasses.replace(base.for_play(), **(overrides or {}))
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: {e}") from None


class _NetworkAgent(Agent):
    """Loads a chess network directory; subclasses pick moves from the network outputs."""

    def __init__(self, net_dir: str, name: str, temperature: float = 0.0, seed: int = 0):
        import jax

        import models
        network = models.load_evaluation(net_dir)
        if network.game != "chess":
            raise ValueError(f"network directory {net_dir} plays '{network.game}', not chess "
                             "(searchless students are av:/sv:/bc: agents)")
        self.name = name
        self.metadata = network.metadata
        self.module = network.module
        self.variables = network.variables
        # (params, observations [B, 8, 8, 119]) -> NetworkOutput (policy_logits [B, 4672], value [B])
        self.evaluate = network.evaluate
        self.temperature = temperature
        self.seed = seed
        self._key = jax.random.PRNGKey(seed)
        self._tracker = _PgxTracker()

    def reset(self, game: int | None = None) -> None:
        if game is not None:
            import jax
            self._key = jax.random.fold_in(jax.random.PRNGKey(self.seed), game)

    def _next_key(self):
        import jax
        self._key, key = jax.random.split(self._key)
        return key

    def options(self) -> list[Option]:
        return [Option("Temperature", "string", self.temperature)]

    def configure(self, name: str, value: str) -> None:
        if name.lower() == "temperature":
            self.temperature = _parse_temperature(value)
        else:
            raise ValueError(f"option '{name}' is not supported by {self.name}")

    def _batched_state(self, board: chess.Board):
        """[1]-batched pgx state of `board`, or None where pgx has ended the game but
        python-chess has not (pgx ends at threefold repetition and 50 moves on its own)."""
        import jax
        state = self._tracker.state(board)
        if bool(state.terminated) or bool(state.truncated):
            return None
        return jax.tree.map(lambda x: x[None], state)

    @staticmethod
    def _rules_move(board: chess.Board):
        """A legal move where pgx has no opinion (the game is drawn by then anyway)."""
        move = min(board.legal_moves, key=lambda m: m.uci())
        return move, {"nodes": 0, "value": 0.0, "pv": [move]}

    def _to_move(self, action: int, board: chess.Board) -> chess.Move:
        from games import chess_bridge
        move = chess_bridge.pgx_action_to_move(int(action), board)
        if move not in board.legal_moves:
            raise ValueError(f"network chose {move.uci()}, illegal in {board.fen()}")
        return move


class PolicyAgent(_NetworkAgent):
    """The network prior alone: argmax over legal moves (or sampled with `temperature`)."""

    def __init__(self, net_dir: str, name: str, temperature: float = 0.0, seed: int = 0):
        super().__init__(net_dir, name, temperature, seed)
        import jax
        self._apply = jax.jit(self.evaluate)

    def select(self, board: chess.Board, limit: Limit | None = None, stop=None):
        import jax
        import jax.numpy as jnp
        start = time.perf_counter()
        states = self._batched_state(board)
        if states is None:
            return self._rules_move(board)
        out = self._apply(self.variables, states.observation)
        logits = jnp.where(states.legal_action_mask[0], out.policy_logits[0], -jnp.inf)
        if self.temperature > 0:
            action = jax.random.categorical(self._next_key(), logits / self.temperature)
        else:
            action = jnp.argmax(logits)
        move = self._to_move(int(action), board)
        return move, {"nodes": 1, "value": float(out.value[0]), "pv": [move],
                      "time": time.perf_counter() - start}


class MctsAgent(_NetworkAgent):
    """Network + MCTS (search.make_search with `search_config`); the most visited move, or
    visits ** (1 / temperature) sampled when temperature > 0."""

    def __init__(self, net_dir: str, name: str, search: Mapping[str, Any] | None = None,
                 temperature: float = 0.0, seed: int = 0):
        """search: SearchConfig fields over the recorded config (e.g. {"num_simulations": 64})."""
        super().__init__(net_dir, name, temperature, seed)
        import games
        self.search = search_config(self.metadata, search, f"network directory {net_dir}")
        self._game = games.make("chess")
        self._searches: dict[object, object] = {}  # SearchConfig -> compiled search
        self._seconds_per_sim: float | None = None  # measured on compiled searches

    @property
    def simulations(self) -> int:
        return self.search.num_simulations

    def options(self) -> list[Option]:
        return [Option("Simulations", "spin", self.simulations, 1, 100000), *super().options()]

    def configure(self, name: str, value: str) -> None:
        if name.lower() in ("simulations", "sims", "nodes"):
            try:
                sims = int(value)
            except ValueError:
                raise ValueError(f"simulations must be an integer, got '{value}'") from None
            if not 1 <= sims <= 100000:
                raise ValueError(f"simulations must be in 1..100000, got {sims}")
            self.search = dataclasses.replace(self.search, num_simulations=sims)
        else:
            super().configure(name, value)

    def _config(self, sims: int):
        """The search of one move: `sims` simulations; temperature > 0 samples (every move unless
        the config limits it to its first temperature_plies)."""
        config = dataclasses.replace(self.search, num_simulations=sims)
        if self.temperature > 0:
            config = dataclasses.replace(config, temperature=self.temperature,
                                         temperature_plies=config.temperature_plies or ALL_PLIES)
        return config

    def _search_fn(self, config):
        from search import make_search
        if config not in self._searches:
            self._searches[config] = make_search(self._game, self.evaluate, config, return_tree=True)
        return self._searches[config]

    def _simulations_for(self, limit: Limit | None) -> int:
        if limit is None or limit.infinite:
            return self.simulations
        if limit.nodes:
            return max(1, limit.nodes)
        if limit.movetime is not None:
            if self._seconds_per_sim is None:  # nothing measured yet: the smallest search
                return min(_SIM_GRID[0], self.simulations)
            affordable = limit.movetime / self._seconds_per_sim
            fitting = [s for s in _SIM_GRID if s <= min(affordable, self.simulations)]
            return fitting[-1] if fitting else 1
        return self.simulations

    def select(self, board: chess.Board, limit: Limit | None = None, stop=None):
        start = time.perf_counter()
        sims = self._simulations_for(limit)
        config = self._config(sims)
        compiled = config in self._searches
        states = self._batched_state(board)
        if states is None:
            return self._rules_move(board)
        out, tree = self._search_fn(config)(self.variables, states, self._next_key())
        action = int(out.action[0])
        if action < 0:
            raise ValueError(f"search found no legal move at {board.fen()}")
        move = self._to_move(action, board)
        elapsed = time.perf_counter() - start
        if compiled:
            self._seconds_per_sim = elapsed / sims
        return move, {"nodes": sims, "value": float(out.root_value[0]),
                      "pv": self._principal_variation(tree, board, move), "time": elapsed}

    def _principal_variation(self, tree, board: chess.Board, first: chess.Move) -> list[chess.Move]:
        """Most-visited path from the root, starting with the move played."""
        import numpy as np

        from games import chess_bridge
        visits = np.asarray(tree.children_visits[0])
        children = np.asarray(tree.children_index[0])
        slot_actions = np.asarray(tree.embeddings.slot_actions[0])
        pv, board, node = [], board.copy(stack=False), tree.ROOT_INDEX
        while len(pv) < 64:
            slot = int(np.argmax(visits[node]))
            if visits[node, slot] == 0:
                break
            if not pv:  # the root: follow the move actually played
                slots = np.flatnonzero(slot_actions[node] == chess_bridge.move_to_pgx_action(
                    first, board.turn == chess.WHITE))
                if not len(slots):
                    break
                slot = int(slots[0])
            try:
                move = chess_bridge.pgx_action_to_move(int(slot_actions[node, slot]), board)
            except ValueError:
                break
            if move not in board.legal_moves:
                break
            pv.append(move)
            board.push(move)
            node = int(children[node, slot])
            if node < 0:
                break
        return pv or [first]


def make_network_agent(spec) -> Agent:
    """mcts:/policy: spec -> agent; for mcts the spec's SearchConfig keys (parsed and checked by
    arena.agents.spec) override the network directory's recorded search."""
    from search import SearchConfig
    temperature = spec.get("temperature", 0.0)
    seed = spec.get("seed", 0)
    if spec.kind == "policy":
        return PolicyAgent(spec.get("net"), spec.name, temperature, seed)
    keys = {f.name for f in dataclasses.fields(SearchConfig) if f.init}
    search = {k: v for k, v in spec.options if k in keys and k != "temperature"}
    return MctsAgent(spec.get("net"), spec.name, search, temperature, seed)
