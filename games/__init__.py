"""Rules and encodings: pgx environments behind one batched interface (`make`, `Game`), and chess's
bridges and encodings: pgx <-> python-chess (chess_bridge), boards as pgx observations without a
State (chess_observation), boards as FEN tokens (fen_tokens) or square features (square_encoding),
moves as the UCI vocabulary (uci_vocab), values as win probabilities and their K bins (winprob);
packed observations (packing), board symmetries (symmetry), extra input planes (features), forced
wins (immediate_wins), each game's ladder (ladders), material and the adjudication of a long
self-play game by it (material).

Other rooms use the names below, never another module of games. The names from games.game load
it (pgx, JAX) on first use (_LAZY): `from games import packing` (the replay actor's only need) and
`from games import winprob` stay free of both.
"""
import importlib

_LAZY = {"SPECS": "games.game", "Game": "games.game", "GameSpec": "games.game", "make": "games.game"}

__all__ = ["SPECS", "Game", "GameSpec", "make", "chess_bridge", "chess_observation", "features", "fen_tokens",
           "immediate_wins", "ladders", "material", "packing", "square_encoding", "symmetry", "uci_vocab", "winprob"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
