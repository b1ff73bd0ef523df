"""SearchConfig: every knob of the tree search, one frozen dataclass (loadable with configs.loader)."""
from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal, Optional, get_args

from configs import Retired

Policy = Literal["puct", "gumbel"]
QTransform = Literal["parent_and_siblings", "min_max", "fpu"]
WinCheck = Literal["tree", "root", "none"]
PolicyTarget = Literal["visits", "completed_q"]
POLICIES, Q_TRANSFORMS, WIN_CHECKS = get_args(Policy), get_args(QTransform), get_args(WinCheck)
POLICY_TARGETS = get_args(PolicyTarget)


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """How one batched search runs and picks its move (AlphaZero defaults for chess)."""

    policy: Policy = "puct"  # "puct" (AlphaZero / mctx.muzero_policy rules) or "gumbel" (Gumbel MuZero)
    num_simulations: int = 128  # simulations per search (tree nodes = num_simulations + 1)
    max_depth: Optional[int] = None  # cap on edges root -> leaf; None = num_simulations (no cap)
    # PUCT exploration C(s) = log((1 + N(s) + pb_c_base) / pb_c_base) + pb_c_init (AlphaZero).
    pb_c_base: float = 19652.0  # c_base
    pb_c_init: float = 1.25  # c_init
    # Q in the PUCT score: "parent_and_siblings" (mctx default: min-max over V(s) and visited Q,
    # unvisited -> 0), "min_max" (fixed bounds [-1, 1] -> [0, 1], unvisited -> 0 = a loss) or "fpu"
    # ([-1, 1] -> [0, 1] unnormalised, unvisited -> V(s) - fpu_reduction: lc0's first-play urgency).
    # Gumbel's completed Q: "parent_and_siblings" rescaled over the siblings, "min_max" on the fixed
    # scale (a flat value's noise stays small beside the prior); "fpu" is PUCT's only. min_max: the
    # search agrees with Stockfish most often, and never less than its prior (docs/experiments/
    # 2026-11-28-search-q-transforms-probe.md)
    q_transform: QTransform = "min_max"
    fpu_reduction: float = 0.0  # "fpu": how much worse than its parent an untried move is assumed
    root_noise: bool = True  # mix Dirichlet noise into the root prior (self-play on, play off)
    dirichlet_alpha: Optional[float] = None  # None -> game.spec.dirichlet_alpha (chess 0.3)
    dirichlet_fraction: float = 0.25  # weight of the noise in the root prior (AlphaZero 0.25)
    temperature: float = 1.0  # visit-count sampling temperature while ply < temperature_plies
    temperature_plies: int = 30  # plies sampled with `temperature`; greedy (most visits) after
    # Self-play's policy target: "visits" (AlphaZero: the root's visit distribution; PUCT only) or
    # "completed_q" (Gumbel MuZero's improved policy softmax(prior + sigma(completed Q)), the prior
    # before root noise; on a PUCT tree sigma reads Q as Gumbel's "min_max" does unless q_transform is
    # "parent_and_siblings"); None: the policy's own (PUCT visits, Gumbel completed Q).
    policy_target: Optional[PolicyTarget] = None
    # Gumbel MuZero (Danihelka et al. 2022); used when policy == "gumbel".
    max_num_considered_actions: int = 16  # root actions kept by Sequential Halving
    gumbel_scale: float = 1.0  # scale of the root Gumbel noise (0 = deterministic play)
    value_scale: float = 0.1  # c_scale of the completed-Q transform (sigma)
    maxvisit_init: float = 50.0  # c_visit of the completed-Q transform (sigma)
    # Forced results without the network (games/immediate_wins.py): "root" plays a move that wins at
    # once (chess: mate in 1) and learns it as a certain target, a small share of a search; "tree"
    # also checks every expanded node and probes checks with few replies (mate in 2), so a node whose
    # side to move has a forced win is certain at its first visit (arena play; several times the cost
    # of a search, measured in docs/experiments/2026-11-23-forced-results-mate-puzzles.md);
    # "none": plain AlphaZero.
    win_check: WinCheck = "root"
    # Certain values (terminal or proven edges) propagate up the tree: a node with a certainly won
    # move is won, a node whose every move is certain takes the best of them (mate in N, draws).
    certainty_propagation: bool = True
    # With certainty propagation, a walk that reaches a certain edge ends there and backs up its exact
    # value (the root statistics are mctx's); False: mctx's walk, which grows a chain of new nodes under
    # each decided line (800-simulation connect-four trees 249 levels deep; bench/deep_search.py).
    stop_at_certain: bool = True
    # Evaluate every node under each of the game's board symmetries (games/symmetry.py) and average
    # (search/symmetric.py): connect four's mirror costs 2x the network per node; chess has none.
    symmetric_eval: bool = False
    win_check_max_checks: int = 16  # chess: checking moves per position tested for mate
    # "tree": a new node with at most this many legal moves, each answered by an immediate win, is a
    # certain loss for its mover (chess: mate in 2 after a check); 0 turns the probe off.
    win_check_max_replies: int = 4
    # Tree reuse (self-play): each search starts from the subtree of the move its game played last
    # (at most num_simulations reused nodes), and spends num_simulations on new nodes; Gumbel's
    # Sequential Halving schedules the new visits only. The actor passes the tree between plies.
    reuse_tree: bool = False
    # removed fields that saved configs (a run's config.yaml, a network's recorded search) still name
    RETIRED: ClassVar = {"prior_temperature": Retired(1.0)}

    def __post_init__(self):
        if self.policy not in POLICIES:
            raise ValueError(f"search policy must be one of {POLICIES}, got {self.policy!r}")
        if self.q_transform not in Q_TRANSFORMS:
            raise ValueError(f"search q_transform must be one of {Q_TRANSFORMS}, got {self.q_transform!r}")
        if self.policy == "gumbel" and self.q_transform == "fpu":
            raise ValueError("search q_transform 'fpu' is PUCT's (Gumbel completes an unvisited move's Q with "
                             "the mixed value): use 'parent_and_siblings' or 'min_max' with policy 'gumbel'")
        if self.policy_target is not None and self.policy_target not in POLICY_TARGETS:
            raise ValueError(f"search policy_target must be one of {POLICY_TARGETS} or null, got {self.policy_target!r}")
        if self.policy == "gumbel" and self.policy_target == "visits":
            raise ValueError("search policy_target 'visits' is PUCT's (Gumbel's visits follow Sequential Halving's "
                             "schedule, not the moves' worth): use 'completed_q' or null with policy 'gumbel'")
        if self.win_check not in WIN_CHECKS:
            raise ValueError(f"search win_check must be one of {WIN_CHECKS}, got {self.win_check!r}")
        if self.win_check_max_replies < 0:
            raise ValueError(f"search win_check_max_replies must be >= 0, got {self.win_check_max_replies}")
        if self.win_check_max_checks < 1:
            raise ValueError(f"search win_check_max_checks must be >= 1, got {self.win_check_max_checks}")
        if self.num_simulations < 1:
            raise ValueError(f"search num_simulations must be >= 1, got {self.num_simulations}")
        if self.max_depth is not None and self.max_depth < 1:
            raise ValueError(f"search max_depth must be >= 1 or None, got {self.max_depth}")
        if not 0.0 <= self.dirichlet_fraction <= 1.0:
            raise ValueError(f"search dirichlet_fraction must be in [0, 1], got {self.dirichlet_fraction}")
        if self.dirichlet_alpha is not None and self.dirichlet_alpha <= 0:
            raise ValueError(f"search dirichlet_alpha must be > 0, got {self.dirichlet_alpha}")
        if self.temperature <= 0:
            raise ValueError(f"search temperature must be > 0, got {self.temperature}")
        if self.temperature_plies < 0:
            raise ValueError(f"search temperature_plies must be >= 0, got {self.temperature_plies}")
        for name in ("value_scale", "pb_c_base"):
            if getattr(self, name) <= 0:  # a negative sigma or c_base would prefer the worst moves
                raise ValueError(f"search {name} must be > 0, got {getattr(self, name)}")
        for name in ("pb_c_init", "maxvisit_init", "gumbel_scale", "fpu_reduction"):
            if getattr(self, name) < 0:
                raise ValueError(f"search {name} must be >= 0, got {getattr(self, name)}")
        if self.max_num_considered_actions < 1:
            raise ValueError("search max_num_considered_actions must be >= 1, "
                             f"got {self.max_num_considered_actions}")

    @property
    def target(self) -> PolicyTarget:
        """The policy target self-play trains on (policy_target, or the policy's own)."""
        if self.policy_target is not None:
            return self.policy_target
        return "visits" if self.policy == "puct" else "completed_q"

    def for_play(self) -> SearchConfig:
        """The search a trained network plays with, everywhere outside self-play (arena agents, the
        in-run evaluator, the benches): no root noise (Dirichlet or Gumbel), the most visited move
        (temperature_plies 0), each position searched afresh (reuse_tree off: the tree carry is the
        self-play actor's), forced results looked for at every node (win_check "tree"; measured
        in docs/experiments/2026-11-27-play-search.md). Every other field is the network's own."""
        return dataclasses.replace(self, root_noise=False, gumbel_scale=0.0, temperature_plies=0,
                                   reuse_tree=False, win_check=PLAY_WIN_CHECK)


PLAY_WIN_CHECK: WinCheck = "tree"  # SearchConfig.for_play's forced-result check
