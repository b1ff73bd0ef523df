"""Where the learner publishes network variables by version and actors pull them (a Ray actor).

The learner calls `publish(version, variables)`; an actor keeps one `get_newer(its_version)` call in
flight and swaps variables when it returns something, so play never waits on the learner. It also
holds what every actor starts from besides the variables (the opening book's lines), so an actor Ray
restarts fetches them again instead of depending on constructor arguments kept in the object store.
"""
from __future__ import annotations

from typing import Any


class ParameterStore:
    """Holds the latest published variables (numpy pytree) and their version."""

    def __init__(self, opening_lines: tuple = ()):
        self.version = -1
        self.variables: Any = None
        self.opening_lines = opening_lines  # pgx action lines (selfplay/openings.py)

    def get_opening_lines(self) -> tuple:
        return self.opening_lines

    def publish(self, version: int, variables: Any) -> int:
        if version > self.version:
            self.version, self.variables = version, variables
        return self.version

    def get_newer(self, version: int) -> tuple[int, Any] | None:
        """(version, variables) if newer than `version`, else None."""
        if self.version > version:
            return self.version, self.variables
        return None
