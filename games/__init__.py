"""Rules and encodings: pgx environments behind one batched interface, and chess's bridges/encodings
(boards as FEN tokens or square features, moves as UCI vocabulary, values as win probabilities and
their K bins: games/winprob.py).

The names from games.game load it (pgx, JAX) on first use: `import games.packing` (the replay
actor's only need) and `from games import winprob` stay free of both.
"""
__all__ = ["SPECS", "Game", "GameSpec", "make", "winprob"]

_LAZY = {"SPECS": "game", "Game": "game", "GameSpec": "game", "make": "game"}  # name -> module, loaded on use


def __getattr__(name: str):
    if name in _LAZY:
        from games import game
        return getattr(game, name)
    raise AttributeError(f"module 'games' has no attribute '{name}'")
