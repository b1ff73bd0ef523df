"""Rules and encodings: pgx environments behind one batched interface, and chess's bridges/encodings.

The names below load games.game (pgx, JAX) on first use: `import games.packing` (the replay actor's
only need) stays free of both.
"""
__all__ = ["SPECS", "Game", "GameSpec", "make"]


def __getattr__(name: str):
    if name in __all__:
        from games import game
        return getattr(game, name)
    raise AttributeError(f"module 'games' has no attribute '{name}'")
