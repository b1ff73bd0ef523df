"""What a running self-play job shows: a rich live table on a terminal, TensorBoard scalars always.

TensorBoard (runs/<name>/tb): loss/{total,policy,value,wdl}, policy_entropy, learning_rate,
selfplay/{games_per_s, positions_per_s, mean_game_length}, learner/samples_per_s, replay/{buffer_positions,
games_total}, outcome/{first_player_wins, draws, first_player_losses} (fractions), resign/{rate,
false_positive_rate}.
"""
from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.live import Live
from rich.table import Table
from tensorboardX import SummaryWriter


class Progress:
    def __init__(self, tb_dir, cfg, show: bool | None = None):
        self.cfg = cfg
        self.writer = SummaryWriter(str(tb_dir))
        self.show = sys.stdout.isatty() if show is None else show
        self.live = Live(console=Console(), refresh_per_second=2, transient=False) if self.show else None
        if self.live:
            self.live.start()
        self.t0 = self.t_rate = time.monotonic()
        self.games = self.positions = self.samples = 0  # since the last rate update
        self.rates = {"games_per_s": 0.0, "positions_per_s": 0.0, "samples_per_s": 0.0}
        self.last_tb = 0.0
        self.last_line = 0.0

    def games_finished(self, result: dict) -> None:
        self.games += result["games"]
        self.positions += result["positions"]

    def trained(self, step: int, batch: int) -> None:
        self.samples += batch

    def update(self, step: int, metrics: dict, replay_stats: dict | None) -> None:
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
            self._tensorboard(step, metrics, replay_stats)
        if self.live:
            self.live.update(self._table(step, metrics, replay_stats))
        elif now - self.last_line >= self.cfg.log_every_seconds:
            self.last_line = now
            print(self._line(step, metrics, replay_stats), flush=True)

    def _tensorboard(self, step: int, m: dict, r: dict) -> None:
        w = self.writer
        for k in ("loss", "policy_loss", "value_loss", "wdl_loss"):
            if k in m:
                w.add_scalar(f"loss/{k.replace('_loss', '') if k != 'loss' else 'total'}", float(m[k]), step)
        for k in ("policy_entropy", "learning_rate", "param_norm"):
            if k in m:
                w.add_scalar(k, float(m[k]), step)
        w.add_scalar("selfplay/games_per_s", self.rates["games_per_s"], step)
        w.add_scalar("selfplay/positions_per_s", self.rates["positions_per_s"], step)
        w.add_scalar("selfplay/mean_game_length", r["mean_game_length"], step)
        w.add_scalar("learner/samples_per_s", self.rates["samples_per_s"], step)
        w.add_scalar("replay/buffer_positions", r["window_positions"], step)
        w.add_scalar("replay/games_total", r["games_total"], step)
        n = max(1, r["games_total"])
        for k in ("first_player_wins", "draws", "first_player_losses"):
            w.add_scalar(f"outcome/{k}", r.get(k, 0) / n, step)
        w.add_scalar("resign/rate", r.get("resigned", 0) / n, step)
        would = r.get("resign_would_have", 0)
        w.add_scalar("resign/false_positive_rate", r.get("resign_false_positives", 0) / max(1, would), step)
        w.flush()

    def _line(self, step: int, m: dict, r: dict) -> str:
        loss = f"{float(m['loss']):.3f}" if "loss" in m else "-"
        return (f"[{time.monotonic() - self.t0:6.0f}s] games {r['games_total']}  "
                f"positions/s {self.rates['positions_per_s']:.1f}  step {step}  loss {loss}  "
                f"buffer {r['window_positions']}  mean plies {r['mean_game_length']:.0f}")

    def _table(self, step: int, m: dict, r: dict) -> Table:
        t = Table(title=f"zerochess self-play: {self.cfg.name} ({self.cfg.game})", show_header=False)
        t.add_column(style="bold")
        t.add_column(justify="right")
        n = max(1, r["games_total"])
        rows = [
            ("elapsed", f"{time.monotonic() - self.t0:.0f} s"),
            ("games", f"{r['games_total']}  ({self.rates['games_per_s']:.2f}/s)"),
            ("positions/s", f"{self.rates['positions_per_s']:.1f}"),
            ("learner step", f"{step}  ({self.rates['samples_per_s']:.0f} samples/s)"),
            ("loss (policy / value)", f"{float(m['loss']):.3f}  ({float(m['policy_loss']):.3f} / "
                                      f"{float(m['value_loss']):.3f})" if "loss" in m else "-"),
            ("buffer positions", str(r["window_positions"])),
            ("mean game length", f"{r['mean_game_length']:.1f}"),
            ("1st-player win / draw / loss", f"{r.get('first_player_wins', 0) / n:.2f} / "
                                             f"{r.get('draws', 0) / n:.2f} / {r.get('first_player_losses', 0) / n:.2f}"),
            ("resigned", f"{r.get('resigned', 0)}  (false positives {r.get('resign_false_positives', 0)}"
                         f"/{r.get('resign_would_have', 0)})"),
        ]
        for k, v in rows:
            t.add_row(k, v)
        return t

    def close(self) -> None:
        if self.live:
            self.live.stop()
        self.writer.close()
