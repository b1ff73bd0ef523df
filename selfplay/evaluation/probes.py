"""The network on fixed positions rather than in games (chess): `mate_puzzles` mateIn1 and mateIn2
Lichess puzzles solved by its search and by its raw policy, and its raw policy, search and value on
the first `probe` positions of the probe set against Stockfish (arena/batched/probe.py): learning shows
there before it shows in games.

    probes = Probes(cfg, search, apply)
    mates_search, mates_policy, n = probes.mates(variables)   # shares solved of n puzzles each; (None, None, None) off chess
    fields = probes.probe_fields(variables)                 # EvalReport's probe_* fields; {} off chess
"""
from __future__ import annotations

from typing import Optional

from games import ladders
from selfplay.config import SelfPlayConfig


class Probes:
    """Mate puzzles and the probe set for one run's networks (the probe set is loaded on first use)."""

    def __init__(self, cfg: SelfPlayConfig, search, apply):
        self.ecfg, self.seed, self.search, self.apply = cfg.evaluation, cfg.seed, search, apply
        self.fen_uci = ladders.ladder(cfg.game).fen_uci  # puzzles and the probe set are FEN and UCI
        self._probe = None

    def mates(self, variables) -> tuple[Optional[float], Optional[float], Optional[int]]:
        """The shares of mate puzzles solved by the search and by the raw policy, and how many each played."""
        if not self.fen_uci or not self.ecfg.mate_puzzles:
            return None, None, None
        from arena import mate_puzzles as mp
        rates = []
        for mover in (mp.search_mover(self.search, variables), mp.policy_mover(self.apply, variables)):
            solved = total = 0
            for theme in ("mateIn1", "mateIn2"):
                puzzles = mp.load_mate_puzzles(theme, self.ecfg.mate_puzzles)
                solved += mp.solve_mate_puzzles(puzzles, mover, self.seed)[0]
                total += len(puzzles)
            rates.append(solved / max(total, 1))
        return rates[0], rates[1], total

    def probe_fields(self, variables) -> dict[str, float]:
        """EvalReport's probe_* fields (empty when the game is not chess or evaluation.probe is 0)."""
        if not self.fen_uci or not self.ecfg.probe:
            return {}
        from arena import probe as probe_lib
        if self._probe is None:
            self._probe = probe_lib.ProbeSet.load(limit=self.ecfg.probe)
        r = probe_lib.probe_network(self._probe, self.apply, variables, self.search, self.seed)
        return {"probe_policy": r.policy.agreement, "probe_policy_lower": r.policy.agreement_lower,
                "probe_policy_upper": r.policy.agreement_upper, "probe_search": r.search.agreement,
                "probe_search_lower": r.search.agreement_lower, "probe_search_upper": r.search.agreement_upper,
                "probe_random": r.random.agreement, "probe_regret_policy": r.policy.regret,
                "probe_regret_search": r.search.regret, "probe_value_error": r.value.error,
                "probe_value_error_lower": r.value.error_lower, "probe_value_error_upper": r.value.error_upper,
                "probe_draw_error": r.value.draw_error}
