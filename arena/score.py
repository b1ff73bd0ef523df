"""Value <-> centipawns through the win-probability curve used by Lichess:

    win% = 50% * 2 / (1 + exp(-0.00368208 * cp))

A network's value v in [-1, 1] is the expected score 2p - 1 with p = win% / 100, so
cp = ln((1 + v) / (1 - v)) / 0.00368208 = 2 atanh(v) / 0.00368208.
"""
from __future__ import annotations

import math

WIN_PROB_SLOPE = 0.00368208
MAX_CP = 20000  # |v| -> 1 maps to +-inf; cap it below mate scores


def cp_from_value(value: float) -> int:
    """Value for the side to move in [-1, 1] -> centipawns (capped at +-MAX_CP)."""
    value = min(max(float(value), -1.0), 1.0)
    if abs(value) >= 1.0:
        return int(math.copysign(MAX_CP, value))
    cp = 2.0 * math.atanh(value) / WIN_PROB_SLOPE
    return int(round(max(-MAX_CP, min(MAX_CP, cp))))


def value_from_cp(cp: float) -> float:
    """Centipawns -> value in [-1, 1] (the forward formula)."""
    return 2.0 / (1.0 + math.exp(-WIN_PROB_SLOPE * cp)) - 1.0
