"""The network on fixed positions rather than in games (chess): Lichess mate puzzles solved by its search
(`mate_puzzles` mateIn1 and mateIn2) and by its raw policy (`policy_mate_puzzles` mateIn1), and its raw
policy, search and value on the first `probe` positions of the probe set against Stockfish
(arena/batched/probe.py): learning shows there before it shows in games.

    probes = Probes(cfg, search, apply)
    mates = probes.mate_fields(variables)                   # EvalReport's mates_* and *mate_puzzles fields
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

    def mate_fields(self, variables) -> dict:
        """EvalReport's mate fields: the shares solved by the search (mateIn1 and mateIn2, `mate_puzzles`
        of each) and by the raw policy (`policy_mate_puzzles` mateIn1s), and how many each played; None
        for a mover that played none (off chess, or its count 0)."""
        search = self._solved((("mateIn1", self.ecfg.mate_puzzles), ("mateIn2", self.ecfg.mate_puzzles)),
                              lambda mp: mp.search_mover(self.search, variables))
        policy = self._solved((("mateIn1", self.ecfg.policy_mate_puzzles),),
                              lambda mp: mp.policy_mover(self.apply, variables))
        return {"mates_search": search[0], "mate_puzzles": search[1],
                "mates_policy": policy[0], "policy_mate_puzzles": policy[1]}

    def _solved(self, themes, make_mover) -> tuple[Optional[float], Optional[int]]:
        """(share solved, puzzles played) of (theme, count) pairs by one mover; (None, None) for none."""
        if not self.fen_uci or not sum(count for _, count in themes):
            return None, None
        from arena import mate_puzzles as mp
        mover, solved, total = make_mover(mp), 0, 0
        for theme, count in themes:
            puzzles = mp.load_mate_puzzles(theme, count)
            solved += mp.solve_mate_puzzles(puzzles, mover, self.seed)[0]
            total += len(puzzles)
        return solved / max(total, 1), total

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
