"""Game records for the replay tests: small synthetic ones, random legal chess games, varied shapes."""
from __future__ import annotations

import chess
import numpy as np

from games import chess_bridge
from replay.record import GameRecord, compress_observation


def make_record(game_id: str, plies: int, seed: int = 0, num_actions: int = 9, width: int = 5) -> GameRecord:
    """A synthetic game: `width` legal moves per position, obs [3, 3, 2] bool."""
    rng = np.random.default_rng(seed)
    legal = np.full(plies, width, np.int16)
    legal_actions = np.concatenate([np.sort(rng.choice(num_actions, width, replace=False)) for _ in range(plies)])
    policy = rng.dirichlet(np.ones(width), size=plies).reshape(-1).astype(np.float32)
    obs = [rng.random((3, 3, 2)) < 0.3 for _ in range(plies)]
    return GameRecord(
        game="tic_tac_toe", game_id=game_id, init_key=np.array([seed, 7], np.uint32),
        actions=legal_actions.reshape(plies, width)[:, 0].astype(np.int32),
        observations=[compress_observation(o) for o in obs], obs_shape=(3, 3, 2), obs_dtype="bool",
        to_play=(np.arange(plies) % 2).astype(np.int8), num_legal=legal, legal_actions=legal_actions.astype(np.int32),
        policy=policy, child_q=rng.uniform(-1, 1, plies * width).astype(np.float32),
        root_value=rng.uniform(-1, 1, plies).astype(np.float32), rewards=np.array([1.0, -1.0], np.float32),
        termination="rules", resign_disabled=True, resign_would_have=1,
        param_versions=np.array([3, 5]), created=123.5)


def chess_record(num_plies: int, seed: int) -> tuple[GameRecord, list[chess.Board]]:
    """A random legal chess game as a record (pgx actions via the bridge), and the boards."""
    rng = np.random.default_rng(seed)
    board = chess.Board()
    actions, legal_counts, legal_actions, boards = [], [], [], []
    for _ in range(num_plies):
        boards.append(board.copy())
        moves = list(board.legal_moves)
        ids = sorted(chess_bridge.move_to_pgx_action(m, board.turn == chess.WHITE) for m in moves)
        legal_counts.append(len(ids))
        legal_actions.extend(ids)
        move = moves[rng.integers(len(moves))]
        actions.append(chess_bridge.move_to_pgx_action(move, board.turn == chess.WHITE))
        board.push(move)
    n = len(legal_actions)
    rec = GameRecord(
        game="chess", game_id=f"c{seed}", init_key=np.zeros(2, np.uint32), actions=np.array(actions, np.int32),
        observations=[compress_observation(np.zeros((8, 8, 119), np.float32))] * num_plies,
        obs_shape=(8, 8, 119), obs_dtype="float32", to_play=(np.arange(num_plies) % 2).astype(np.int8),
        num_legal=np.array(legal_counts, np.int16), legal_actions=np.array(legal_actions, np.int32),
        policy=np.full(n, 0.05, np.float32), child_q=np.zeros(n, np.float32),
        root_value=np.zeros(num_plies, np.float32), rewards=np.zeros(2, np.float32), termination="cap",
        resign_disabled=False, resign_would_have=-1, param_versions=np.array([0, 0]), created=0.0)
    return rec, boards


def varied_record(game_id: str, plies: int, seed: int, float_obs: bool = False, dtype: str = "bool") -> GameRecord:
    """A synthetic game whose positions have 1-9 legal moves each; obs [3, 3, 2] 0/1 of `dtype`
    (packable) or, with `float_obs`, float32 planes of several values each (not packable)."""
    rng = np.random.default_rng(seed)
    legal = rng.integers(1, 10, plies).astype(np.int16)
    legal_actions = np.concatenate([np.sort(rng.choice(9, n, replace=False)) for n in legal]).astype(np.int32)
    policy = np.concatenate([rng.dirichlet(np.ones(n)) for n in legal]).astype(np.float32)
    if float_obs:
        obs, dtype = [rng.random((3, 3, 2)).astype(np.float32) for _ in range(plies)], "float32"
    else:
        obs = [(rng.random((3, 3, 2)) < 0.4).astype(dtype) for _ in range(plies)]
    return GameRecord(
        game="tic_tac_toe", game_id=game_id, init_key=np.array([seed, 1], np.uint32),
        actions=np.zeros(plies, np.int32), observations=[compress_observation(o) for o in obs],
        obs_shape=(3, 3, 2), obs_dtype=dtype, to_play=(np.arange(plies) % 2).astype(np.int8), num_legal=legal,
        legal_actions=legal_actions, policy=policy, child_q=np.zeros(len(policy), np.float32),
        root_value=rng.uniform(-1, 1, plies).astype(np.float32),
        rewards=np.array([1.0, -1.0] if seed % 3 else [0.0, 0.0], np.float32), termination="rules",
        resign_disabled=False, resign_would_have=-1, param_versions=np.array([0, 0]), created=0.0)

