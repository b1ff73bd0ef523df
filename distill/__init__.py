"""Searchless students (Ruoss et al. 2024): Stockfish/self-play annotation -> records -> AV/SV/BC
training -> student network directories, played as arena's av:/sv:/bc: agents and evaluated
(action accuracy, Kendall's tau, puzzles) like any arena agent. See docs/distill.md.

Other rooms use the names below, never a module of distill; `load_boards` and `read_anchor_set` load JAX
on first use (_LAZY). The CLI distill.py, this room's own front, calls its steps' modules (annotate, train,
evaluate, warm_start: each module is named as the function it runs, so no face can name both).
"""
import importlib

from distill.config import DataConfig, DistillConfig
from distill.records import RecordStore

_LAZY = {"load_boards": "distill.warm_start", "read_anchor_set": "distill.anchors"}

__all__ = ["DataConfig", "DistillConfig", "RecordStore", "load_boards", "read_anchor_set"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
