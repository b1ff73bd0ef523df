"""A run's sample games: every `sample_game_every`-th finished chess game, appended to games.pgn."""
from __future__ import annotations

from pathlib import Path

from arena import append_pgn
from replay import decode


def append_sample_game(run_dir: Path, frame: bytes) -> None:
    """Appends one finished chess game (a replay record's bytes) to games.pgn (python-chess via
    games/chess_bridge): the network's side named by the parameter versions that played the game, the
    sparring partner's (if any) by the engine and its settings."""
    from games import chess_bridge

    record = decode(frame)
    white = int(record.to_play[0]) if record.plies else 0  # pgx player id of white, who moves first
    first, last = (int(v) for v in record.param_versions[:2])
    network = f"zerochess v{first}" if first == last else f"zerochess v{first}-v{last}"
    names = [network, network]  # by pgx player id
    if record.partner_player >= 0:
        names[record.partner_player] = record.partner
    white_reward = record.rewards[white] if record.plies else 0.0
    result = "1-0" if white_reward > 0 else "0-1" if white_reward < 0 else "1/2-1/2"
    game = chess_bridge.actions_to_pgn(
        record.actions.tolist(), result=result,
        headers={"Event": "zerochess self-play", "Round": record.game_id, "Termination": record.termination,
                 "White": names[white], "Black": names[1 - white]})
    append_pgn(run_dir / "games.pgn", game)
