"""Rules and encodings: pgx environments behind one batched interface, and chess's bridges/encodings."""
from games.game import SPECS, Game, GameSpec, make

__all__ = ["SPECS", "Game", "GameSpec", "make"]
