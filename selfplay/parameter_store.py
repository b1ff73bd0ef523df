"""Where the learner publishes network variables by version and actors pull them (a Ray actor).

The learner calls `publish(version, variables)`; an actor keeps one `get_newer(its_version)` call in
flight and swaps variables when it returns something, so play never waits on the learner.
"""
from __future__ import annotations

from typing import Any


class ParameterStore:
    """Holds the latest published variables (numpy pytree) and their version."""

    def __init__(self):
        self.version = -1
        self.variables: Any = None

    def publish(self, version: int, variables: Any) -> int:
        if version > self.version:
            self.version, self.variables = version, variables
        return self.version

    def get_newer(self, version: int) -> tuple[int, Any] | None:
        """(version, variables) if newer than `version`, else None."""
        if self.version > version:
            return self.version, self.variables
        return None
