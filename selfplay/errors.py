"""The error a run raises when it cannot start or go on as asked: selfplay.py prints it as one line."""


class RunError(RuntimeError):
    """A run that cannot start as asked (existing run without --resume, nothing to resume, ...)."""
