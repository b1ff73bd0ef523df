"""What a running self-play job shows: a rich live table on a terminal, TensorBoard scalars always.

TensorBoard (runs/<name>/tb): loss/{total,policy,value,wdl}, policy_entropy, value_std, learning_rate,
selfplay/{games_per_s, positions_per_s, mean_game_length}, learner/{samples_per_s, samples_per_s_training,
train_ratio, batch_wait_share}, gpu/{busy, memory_gb} (per GPU with several), replay/{buffer_positions,
buffer_mb, games_total}, outcome/{first_player_wins, draws, first_player_losses} (fractions), resign/{rate,
false_positive_rate, threshold}, value/{std_vs_start, active, explained} and trained/{won_by_rules, resigned, capped,
drawn_by_rules, sample_age} (value health, docs/selfplay.md#value-health); with the in-run evaluator
eval/{elo, elo_lower, elo_upper, score_vs_random, mates_search, mates_policy, seconds, policy_elo,
policy_elo_lower, policy_elo_upper, policy_score_vs_random} at the evaluated network's step.
"""
from __future__ import annotations

import collections
import sys
import time
from typing import Optional

from rich.console import Console
from rich.live import Live
from rich.table import Table
from tensorboardX import SummaryWriter

from selfplay.config import SelfPlayConfig
from selfplay.evaluation import PROBE_FIELDS
from selfplay.gpu_monitor import GpuSample, describe
from selfplay.messages import EvalReport, LearnerFigures, PlayReport, ReplayStats, TrainMetrics


def health_text(m: Optional[TrainMetrics], value_std_start: Optional[float] = None) -> str:
    """The value head's figures and what the learner trains on (docs/selfplay.md#value-health):
    "value std 0.21 (350% of start), 48% active, explained 0.31; trained won/resigned/capped/drawn
    40/10/30/20%, age 35 steps" (with anchor boards: "30/10/20/15% + anchor 25%"; with
    learner.start_policy_weight: "; policy KL from start 0.042"; with start_value_weight: "; value RMS from
    start 0.031"; with start_entropy_weight: "; prior entropy -0.120 nats from start"); "" before the first
    step."""
    if m is None or m.value_std is None:
        return ""
    text = f"value std {m.value_std:.2g}"
    if value_std_start:
        text += f" ({100 * m.value_std / value_std_start:.0f}% of start)"
    if m.value_active is not None:
        text += f", {100 * m.value_active:.0f}% active"
    if m.value_explained is not None:
        text += f", explained {m.value_explained:.2f}"
    if m.trained_won_by_rules is not None:
        shares = (m.trained_won_by_rules, m.trained_resigned, m.trained_capped, m.trained_drawn_by_rules)
        text += "; trained won/resigned/capped/drawn " + "/".join(f"{100 * x:.0f}" for x in shares) + "%"
        adjudicated = m.trained_adjudicated or 0.0
        if adjudicated > 0.005:
            text += f" + adjudicated {100 * adjudicated:.0f}%"
        anchor = 1.0 - sum(shares) - adjudicated  # the rest are anchor boards (replay.anchor_fraction)
        if anchor > 0.005:
            text += f" + anchor {100 * anchor:.0f}%"
    if m.sample_age is not None:
        text += f", age {m.sample_age:.0f} steps"
    if m.start_kl is not None:  # learner.start_policy_weight: how far the policy has moved from the start's
        text += f"; policy KL from start {m.start_kl:.3f}"
    if m.start_value_gap is not None:  # learner.start_value_weight: the value's, as a root mean square
        text += f"; value RMS from start {m.start_value_gap ** 0.5:.3f}"
    if m.start_entropy_gap is not None:  # learner.start_entropy_weight: the prior's sharpness against the start's
        text += f"; prior entropy {m.start_entropy_gap:+.3f} nats from start"
    return text


def elo_text(report: Optional[EvalReport]) -> str:
    if report is None:
        return "-"
    text = (f"{report.elo:+.0f} [{report.elo_lower:+.0f}, {report.elo_upper:+.0f}] at step {report.step}, "
            f"{100 * report.score_vs_random:.0f}% vs random")
    if report.policy_elo is not None:
        text += (f"; raw policy {report.policy_elo:+.0f} [{report.policy_elo_lower:+.0f}, "
                 f"{report.policy_elo_upper:+.0f}], {100 * report.policy_score_vs_random:.0f}% vs random")
    return text


def probe_text(report: Optional[EvalReport]) -> Optional[str]:
    """The probe figures of an evaluation (None without them): agreement with Stockfish's best move
    and the value's error, each beside what a random mover / a constant draw gets."""
    if report is None or report.probe_policy is None:
        return None
    pct = lambda lo, hi: f"[{100 * lo:.0f}, {100 * hi:.0f}]"  # noqa: E731
    return (f"agrees with Stockfish: policy {100 * report.probe_policy:.1f}% "
            f"{pct(report.probe_policy_lower, report.probe_policy_upper)}, search {100 * report.probe_search:.1f}% "
            f"{pct(report.probe_search_lower, report.probe_search_upper)}, random {100 * report.probe_random:.1f}%; "
            f"value error {report.probe_value_error:.1f} [{report.probe_value_error_lower:.1f}, "
            f"{report.probe_value_error_upper:.1f}] (draw {report.probe_draw_error:.1f}) win%")


PARTNER_WINDOW = 200  # sparring games the progress line's score is over (+-7 points at 95% near 30%)

class Progress:
    def __init__(self, tb_dir, cfg: SelfPlayConfig, show: bool | None = None):
        self.cfg = cfg
        self.writer = SummaryWriter(str(tb_dir))
        self.show = sys.stdout.isatty() if show is None else show
        self.live = Live(console=Console(), refresh_per_second=2, transient=False) if self.show else None
        if self.live:
            self.live.start()
        self.t0 = self.t_rate = time.monotonic()
        self.games = self.positions = self.samples = 0  # since the last rate update
        self.rates = {"games_per_s": 0.0, "positions_per_s": 0.0, "samples_per_s": 0.0}
        self.resign_thresholds: dict[int, float] = {}  # per actor: its latest (PlayReport.resign_threshold)
        # actors.sparring_fraction: the network's scores in its latest sparring games, and over the session
        self.partner_recent: collections.deque = collections.deque(maxlen=PARTNER_WINDOW)
        self.partner_games, self.partner_points = 0, 0.0
        self.last_tb = 0.0
        self.last_line = 0.0
        self.evaluation: Optional[EvalReport] = None  # the latest in-run evaluation
        self.value_std_start: Optional[float] = None  # the run's first value std (update() sets it)

    def evaluated(self, report: EvalReport) -> None:
        """An evaluation finished: TensorBoard eval/* at its step; the display shows its Elo."""
        self.evaluation = report
        w = self.writer
        for field in ("elo", "elo_lower", "elo_upper", "score_vs_random", "mates_search", "mates_policy",
                      "seconds", "policy_elo", "policy_elo_lower", "policy_elo_upper", "policy_score_vs_random",
                      *PROBE_FIELDS):
            value = getattr(report, field)
            if value is not None:
                w.add_scalar(f"eval/{field}", value, report.step)
        w.flush()
        if not self.live:
            print(f"evaluation: Elo {elo_text(report)} ({report.seconds:.0f} s)", flush=True)
            if probe_text(report):
                print(f"evaluation: probe at step {report.step}: {probe_text(report)}", flush=True)

    def games_finished(self, report: PlayReport) -> None:
        self.games += report.games
        self.positions += report.positions
        if report.resign_threshold is not None:
            self.resign_thresholds[report.actor] = report.resign_threshold
        self.partner_recent.extend(report.partner_scores)
        self.partner_games += len(report.partner_scores)
        self.partner_points += sum(report.partner_scores)

    def partner_text(self) -> str:
        """'vs Stockfish s0 d1 27% of 200' over the latest sparring games; '' without any."""
        if not self.partner_recent:
            return ""
        a = self.cfg.actors
        score = sum(self.partner_recent) / len(self.partner_recent)
        return f"vs Stockfish s{a.sparring_skill} d{a.sparring_depth} {score:.0%} of {len(self.partner_recent)}"

    def partner_score(self) -> Optional[float]:
        """The network's score over this session's sparring games (None: none finished)."""
        return self.partner_points / self.partner_games if self.partner_games else None

    def resign_threshold(self) -> Optional[float]:
        """The actors' latest resign thresholds, averaged (None: resignation off, or no report yet)."""
        t = self.resign_thresholds
        return sum(t.values()) / len(t) if t else None

    def trained(self, step: int, batch: int) -> None:
        self.samples += batch

    def update(self, step: int, metrics: Optional[TrainMetrics], replay_stats: Optional[ReplayStats],
               gpus: tuple[GpuSample, ...] = (), learner: Optional[LearnerFigures] = None,
               value_std_start: Optional[float] = None) -> None:
        """`value_std_start`: the run's first value std (learner/health.py), what value std is shown against."""
        self.value_std_start = value_std_start
        now = time.monotonic()
        dt = now - self.t_rate
        if dt >= 5.0:
            self.rates = {"games_per_s": self.games / dt, "positions_per_s": self.positions / dt,
                          "samples_per_s": self.samples / dt}
            self.games = self.positions = self.samples = 0
            self.t_rate = now
        if replay_stats is None:
            return
        if now - self.last_tb >= self.cfg.log_every_seconds:
            self.last_tb = now
            self._tensorboard(step, metrics, replay_stats, gpus, learner)
        if self.live:
            self.live.update(self._table(step, metrics, replay_stats, gpus, learner))
        elif now - self.last_line >= self.cfg.log_every_seconds:
            self.last_line = now
            print(self._line(step, metrics, replay_stats, gpus, learner), flush=True)

    def _tensorboard(self, step: int, m: Optional[TrainMetrics], r: ReplayStats, gpus: tuple[GpuSample, ...],
                     learner: Optional[LearnerFigures]) -> None:
        w = self.writer
        for g in gpus:
            suffix = "" if len(gpus) == 1 else f"_{g.index}"
            w.add_scalar(f"gpu/busy{suffix}", g.busy, step)
            w.add_scalar(f"gpu/memory_gb{suffix}", g.memory_used_gb, step)
        if learner is not None:
            w.add_scalar("learner/samples_per_s_training", learner.samples_per_s_training, step)
            w.add_scalar("learner/train_ratio", learner.train_ratio, step)
            if learner.seconds_training:
                w.add_scalar("learner/batch_wait_share", learner.seconds_waiting_for_batches / learner.seconds_training,
                             step)
        if m is not None:
            w.add_scalar("loss/total", m.loss, step)
            w.add_scalar("loss/policy", m.policy_loss, step)
            w.add_scalar("loss/value", m.value_loss, step)
            if m.wdl_loss is not None:
                w.add_scalar("loss/wdl", m.wdl_loss, step)
            if m.start_kl is not None:
                w.add_scalar("loss/start_kl", m.start_kl, step)
            if m.start_value_gap is not None:
                w.add_scalar("loss/start_value_gap", m.start_value_gap, step)
            if m.start_entropy_gap is not None:
                w.add_scalar("loss/start_entropy_gap", m.start_entropy_gap, step)
            w.add_scalar("policy_entropy", m.policy_entropy, step)
            if m.value_std is not None:
                w.add_scalar("value_std", m.value_std, step)
                if self.value_std_start:
                    w.add_scalar("value/std_vs_start", m.value_std / self.value_std_start, step)
            for name, value in (("value/active", m.value_active), ("value/explained", m.value_explained),
                                ("trained/won_by_rules", m.trained_won_by_rules),
                                ("trained/resigned", m.trained_resigned), ("trained/capped", m.trained_capped),
                                ("trained/drawn_by_rules", m.trained_drawn_by_rules),
                                ("trained/adjudicated", m.trained_adjudicated),
                                ("trained/sample_age", m.sample_age)):
                if value is not None:
                    w.add_scalar(name, value, step)
            w.add_scalar("learning_rate", m.learning_rate, step)
            w.add_scalar("param_norm", m.param_norm, step)
        w.add_scalar("selfplay/games_per_s", self.rates["games_per_s"], step)
        w.add_scalar("selfplay/positions_per_s", self.rates["positions_per_s"], step)
        w.add_scalar("selfplay/mean_game_length", r.mean_game_length, step)
        w.add_scalar("learner/samples_per_s", self.rates["samples_per_s"], step)
        w.add_scalar("replay/buffer_positions", r.window_positions, step)
        w.add_scalar("replay/buffer_mb", r.window_bytes / 2**20, step)
        w.add_scalar("replay/games_total", r.games_total, step)
        w.add_scalar("outcome/first_player_wins", r.fraction(r.first_player_wins), step)
        w.add_scalar("outcome/draws", r.fraction(r.draws), step)
        w.add_scalar("outcome/first_player_losses", r.fraction(r.first_player_losses), step)
        w.add_scalar("resign/rate", r.fraction(r.resigned), step)
        w.add_scalar("resign/false_positive_rate", r.resign_false_positive_rate, step)
        if (threshold := self.resign_threshold()) is not None:
            w.add_scalar("resign/threshold", threshold, step)
        if self.partner_recent:
            w.add_scalar("sparring/score", sum(self.partner_recent) / len(self.partner_recent), step)
        w.flush()

    def _line(self, step: int, m: Optional[TrainMetrics], r: ReplayStats, gpus: tuple[GpuSample, ...] = (),
              learner: Optional[LearnerFigures] = None) -> str:
        loss = f"{m.loss:.3f}" if m is not None else "-"
        return (f"[{time.monotonic() - self.t0:6.0f}s] games {r.games_total}  "
                f"positions/s {self.rates['positions_per_s']:.1f}  step {step}  loss {loss}  "
                f"buffer {r.window_positions}  mean plies {r.mean_game_length:.0f}"
                + (f"  train ratio {learner.train_ratio:.2f}" if learner and learner.steps else "")
                + (f"  {describe(gpus)}" if gpus else "")
                + (f"  Elo {self.evaluation.elo:+.0f}" if self.evaluation else "")
                + (f"  {partner}" if (partner := self.partner_text()) else "")
                + (f"  {health}" if (health := health_text(m, self.value_std_start)) else ""))

    def _table(self, step: int, m: Optional[TrainMetrics], r: ReplayStats, gpus: tuple[GpuSample, ...] = (),
               learner: Optional[LearnerFigures] = None) -> Table:
        t = Table(title=f"zerochess self-play: {self.cfg.name} ({self.cfg.game})", show_header=False)
        t.add_column(style="bold")
        t.add_column(justify="right")
        rows = [
            ("elapsed", f"{time.monotonic() - self.t0:.0f} s"),
            ("games", f"{r.games_total}  ({self.rates['games_per_s']:.2f}/s)"),
            ("positions/s", f"{self.rates['positions_per_s']:.1f}"),
            ("learner step", f"{step}  ({self.rates['samples_per_s']:.0f} samples/s)"),
            ("train ratio (samples / position)", f"{learner.train_ratio:.2f} of {self.cfg.learner.train_ratio:g}"
                                                 if learner and learner.steps else "-"),
            ("loss (policy / value)", f"{m.loss:.3f}  ({m.policy_loss:.3f} / {m.value_loss:.3f})"
                                      if m is not None else "-"),
            ("buffer positions", str(r.window_positions)),
            ("mean game length", f"{r.mean_game_length:.1f}"),
            ("1st-player win / draw / loss", f"{r.fraction(r.first_player_wins):.2f} / "
                                             f"{r.fraction(r.draws):.2f} / {r.fraction(r.first_player_losses):.2f}"),
            ("resigned", f"{r.resigned}  (false positives {r.resign_false_positives}/{r.resign_would_have}"
                         + (f", threshold {t:+.2f})" if (t := self.resign_threshold()) is not None else ")")),
            ("value health", health_text(m, self.value_std_start) or "-"),
        ]
        if self.cfg.actors.sparring_fraction:
            rows.append(("sparring (the network's score)", self.partner_text() or "-"))
        rows += [(f"GPU{'' if len(gpus) == 1 else g.index} busy / memory",
                  f"{g.busy:.0f}%  {g.memory_used_gb:.1f} / {g.memory_total_gb:.0f} GiB") for g in gpus]
        if self.cfg.evaluation.enabled:
            rows.append(("Elo (vs random = 0)", elo_text(self.evaluation)))
            if probe_text(self.evaluation):
                rows.append(("probe", probe_text(self.evaluation)))
        for k, v in rows:
            t.add_row(k, v)
        return t

    def close(self) -> None:
        if self.live:
            self.live.stop()
        self.writer.close()
