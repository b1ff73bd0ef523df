"""The in-run evaluator's picture, runs/<name>/eval/progress.png: Elo of the searched network and of
its raw policy (95% intervals, the latest fit) against time and learner step, the fixed anchors as
lines, scores against random, the learner's loss, mate-puzzle rates with 95% intervals (raw policy,
search; chess) and the probe set's figures (chess)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from selfplay.evaluation.learning import MateField, mates_interval
from selfplay.evaluation.store import RANDOM, is_run_player, network_name, policy_name
from selfplay.messages import EvalReport


def anchor_labels(players, within: float = 15.0) -> list[tuple[float, list[str]]]:
    """Fixed opponents (not the run's networks, not random) as (rating, names), anchors rated within
    `within` Elo of the group's first joined into one line (one legend entry in the progress picture)."""
    anchors = sorted((p.rating, p.name) for p in players
                     if not is_run_player(p.name) and p.name != RANDOM and math.isfinite(p.rating))
    groups: list[tuple[float, list[str]]] = []
    for rating, name in anchors:
        if groups and rating - groups[-1][0] < within:
            groups[-1][1].append(name)
        else:
            groups.append((rating, [name]))
    return groups


ANCHOR_COLOURS = ("tab:red", "tab:purple", "tab:brown", "tab:olive", "tab:cyan", "tab:pink", "tab:green")


def plot_progress(path: Path, reports: list[EvalReport], fit, title: str) -> None:
    """Elo (latest fit, 95% intervals) of the searched network and of its raw policy against hours
    and learner step; scores against random; loss; with probe figures (chess), the agreement with
    Stockfish and the value's error against learner step; with mate puzzles (chess), the raw policy's
    and the search's shares solved against learner step, each on its own scale."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rated = {p.name: p for p in fit.players}
    probed = any(r.probe_policy is not None for r in reports)
    mated = any(r.mates_policy is not None or r.mates_search is not None for r in reports)
    columns = 2 + probed + mated
    fig, axes = plt.subplots(2, columns, figsize=(5.4 * columns, 7), squeeze=False)
    scale, unit = (1, "hours") if reports and reports[-1].hours >= 2 else (60, "minutes")
    curves = ((network_name, "network (MCTS, run's search)", "o", 0.0),
              (policy_name, "raw policy (no search)", "s", 0.01))
    for ax, unit_of, label in ((axes[0, 0], lambda r: scale * r.hours, unit),
                               (axes[0, 1], lambda r: r.step, "learner step")):
        for name_of, curve, marker, shift in curves:
            rows = [(r, rated[name_of(r.step)]) for r in reports if name_of(r.step) in rated]
            if not rows:
                continue
            # the policy's points shifted by 1% of the axis: both intervals stay readable where they overlap
            x = np.array([unit_of(r) for r, _ in rows]) + shift * (unit_of(reports[-1]) - unit_of(reports[0]))
            elo = np.array([p.rating for _, p in rows])
            err = np.array([[p.rating - p.lower for _, p in rows], [p.upper - p.rating for _, p in rows]])
            ax.errorbar(x, elo, yerr=err, marker=marker, capsize=3, label=curve)
        ax.axhline(0, color="grey", lw=0.8, ls="--", label="random = 0")
        # anchors named in the legend, one colour each: labels on the lines overprinted one another
        # (anchors rated close together) and the curve's last points
        for k, (rating, names) in enumerate(anchor_labels(fit.players)):
            ax.axhline(rating, lw=1.0, ls=":", color=ANCHOR_COLOURS[k % len(ANCHOR_COLOURS)],
                       label=f"{', '.join(names)} ({rating:+.0f})")
        ax.set_xlabel(label)
        ax.set_ylabel("Elo (95% interval)")
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8, loc="best")
    hours = [scale * r.hours for r in reports]
    ax = axes[1, 0]
    for field, label in (("score_vs_random", "score vs random, search"),
                         ("policy_score_vs_random", "score vs random, raw policy")):
        values = [getattr(r, field) for r in reports]
        if any(v is not None for v in values):
            ax.plot(hours, [np.nan if v is None else v for v in values], marker="o", label=label)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(unit)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax = axes[1, 1]
    ax.plot(hours, [np.nan if r.loss is None else r.loss for r in reports], marker="o")
    ax.set_xlabel(unit)
    ax.set_ylabel("learner loss (total)")
    ax.grid(alpha=0.3)
    if probed:
        _plot_probe(axes[0, 2], axes[1, 2], [r for r in reports if r.probe_policy is not None])
    if mated:
        for ax, field, label in ((axes[0, -1], "mates_policy", "raw policy: mateIn1 puzzles"),
                                 (axes[1, -1], "mates_search", "search: mateIn1 + mateIn2 puzzles")):
            _plot_mates(ax, [r for r in reports if getattr(r, field) is not None], field, label)
    for ax in axes.flat:
        widen_lone_x(ax)
    fig.suptitle(f"{title}: strength by evaluation")
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=90)
    plt.close(fig)
    tmp.replace(path)


def widen_lone_x(ax) -> None:
    """An axis whose points sit at one x (a run with one evaluation; the raw policy's shifted 1% beside the
    search's) spans [0, 1] or [0, 2x], and one with no point says so: matplotlib's own margins there
    are slivers (minutes 0.0033-0.0036) whose tick labels read as data."""
    x0, x1 = ax.dataLim.x0, ax.dataLim.x1
    if not (np.isfinite(x0) and np.isfinite(x1)):
        ax.set_xlim(0.0, 1.0)
        ax.text(0.5, 0.5, "none yet", transform=ax.transAxes, ha="center", va="center", color="grey")
        return
    if x1 - x0 > 0.02 * max(abs(x0), abs(x1), 1.0):
        return
    right = max(2 * abs(x1), 1.0)
    ax.set_xlim(min(x0, 0.0) - 0.05 * right, right)


def _plot_probe(agree_ax, value_ax, reports: list[EvalReport]) -> None:
    """The probe set (arena/batched/probe.py) against learner step: the share of positions where the raw
    policy's / the search's move is Stockfish's best (95% intervals; a random mover's as a line),
    and the value's mean error in win% beside a constant draw's."""
    steps = np.array([r.step for r in reports], float)
    shift = 0.01 * max(np.ptp(steps), 1.0)
    for field, label, marker, dx in (("probe_policy", "raw policy", "s", shift), ("probe_search", "search", "o", 0.0)):
        mid = np.array([getattr(r, field) for r in reports]) * 100
        err = np.array([mid - 100 * np.array([getattr(r, field + "_lower") for r in reports]),
                        100 * np.array([getattr(r, field + "_upper") for r in reports]) - mid])
        agree_ax.errorbar(steps + dx, mid, yerr=err, marker=marker, capsize=3, label=label)
    # the random mover's and the constant draw's figures are the probe set's own: lines, seen from one evaluation on
    agree_ax.axhline(100 * reports[-1].probe_random, ls="--", color="grey", label="random mover")
    agree_ax.set_xlabel("learner step")
    agree_ax.set_ylabel("% of probe positions: Stockfish's best move")
    agree_ax.set_ylim(bottom=0)
    agree_ax.legend(fontsize=8)
    agree_ax.grid(alpha=0.3)
    err = np.array([[r.probe_value_error - r.probe_value_error_lower for r in reports],
                    [r.probe_value_error_upper - r.probe_value_error for r in reports]])
    value_ax.errorbar(steps, [r.probe_value_error for r in reports], yerr=err, marker="o", capsize=3,
                      label="value head")
    value_ax.axhline(reports[-1].probe_draw_error, ls="--", color="grey", label="always a draw")
    value_ax.set_xlabel("learner step")
    value_ax.set_ylabel("mean |error| of win% vs Stockfish (probe)")
    value_ax.set_ylim(bottom=0)
    value_ax.legend(fontsize=8)
    value_ax.grid(alpha=0.3)


def _plot_mates(ax, reports: list[EvalReport], field: MateField, label: str) -> None:
    """A mate-puzzle share (mates_policy or mates_search) in % against learner step, on its own scale,
    with its 95% Wilson interval where the row counted its puzzles (older rows: the point alone). The raw
    policy's is the first thing self-play teaches a chess network on 2 cores."""
    steps = [r.step for r in reports]
    mid = np.array([100 * getattr(r, field) for r in reports])
    spans = [mates_interval(r, field) for r in reports]
    err = np.array([[m - 100 * s[0] if s else 0.0 for m, s in zip(mid, spans)],
                    [100 * s[1] - m if s else 0.0 for m, s in zip(mid, spans)]])
    ax.errorbar(steps, mid, yerr=err, marker="o", capsize=3, color="tab:green" if field == "mates_policy" else "tab:blue")
    if spans and spans[0]:  # a later point whose interval clears this line has risen (learning.py)
        ax.axhline(100 * spans[0][1], ls="--", color="grey", lw=0.8, label=f"step {steps[0]}'s upper 95%")
        ax.legend(fontsize=8, loc="lower right")
    ax.set_xlabel("learner step")
    ax.set_title(label, fontsize=10)
    ax.set_ylabel("% solved (95% interval)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
