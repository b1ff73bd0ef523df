"""A run's sample games: every `sample_game_every`-th finished chess game, appended to games.pgn."""
from __future__ import annotations

from pathlib import Path

from arena import append_pgn
from replay import decode


def append_sample_game(run_dir: Path, frame: bytes) -> None:
    """Appends one finished chess game (a replay record's bytes) to games.pgn (python-chess via
    games/chess_bridge): White and Black are the network versions that played each side."""
    from games import chess_bridge

    record = decode(frame)
    white_reward = record.rewards[int(record.to_play[0])] if record.plies else 0.0  # white moves first
    result = "1-0" if white_reward > 0 else "0-1" if white_reward < 0 else "1/2-1/2"
    game = chess_bridge.actions_to_pgn(
        record.actions.tolist(), result=result,
        headers={"Event": "zerochess self-play", "Round": record.game_id, "Termination": record.termination,
                 "White": f"zerochess v{record.param_versions[0]}", "Black": f"zerochess v{record.param_versions[1]}"})
    append_pgn(run_dir / "games.pgn", game)
