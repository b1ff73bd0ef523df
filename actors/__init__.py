"""Self-play actors (Ray): batches of games played with the batched search, streamed to replay.

Other rooms use the names below, never a module of actors; `SelfPlayActor` loads Ray and JAX on
first use (_LAZY), so reading the config stays light.
"""
import importlib

from actors.config import ActorConfig
from actors.messages import PlayReport

_LAZY = {"SelfPlayActor": "actors.selfplay_actor"}

__all__ = ["ActorConfig", "PlayReport", "SelfPlayActor"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
