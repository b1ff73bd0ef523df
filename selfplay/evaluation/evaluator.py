"""The in-run evaluator (a Ray actor beside the self-play actors): how strong is each new network?

    evaluator = ray.remote(Evaluator).options(num_cpus=..., num_gpus=...).remote(run_dir, cfg, store)
    report = ray.get(evaluator.evaluate.remote(EvalRequest(step, hours, positions, games, loss)))

Every `evaluation.every_steps` learner steps (or `every_minutes`) the run asks for an evaluation of
the newest published network (selfplay/evaluation/handle.py), played with the run's own search as
every player plays it (`SearchConfig.for_play`: no noise, greedy, forced results checked at every
node). The evaluator
  - plays a gauntlet against a random mover, the run's earlier networks and the game's engine
    ladder, and the same network's raw policy (greedy, no search: player policy-step-N) against the
    fixed anchors (random and the ladder), so a run shows what the network learned apart from what
    its search finds (the untrained network's search already beats random in chess by finding
    mates): selfplay/evaluation/opponents.py;
  - (chess) solves mate puzzles and measures the network on the probe set against Stockfish:
    selfplay/evaluation/probes.py;
  - refits the ratings of every network evaluated so far from every gauntlet game (arena/ratings/bayeselo.py,
    BayesElo model, random = 0, 95% intervals) and writes runs/<name>/eval/
    (selfplay/evaluation/store.py, plot.py):
        games.csv       every gauntlet game: step, white, black, white's score, plies, termination
        ratings.csv     one row per evaluation (the Elo as fitted then), appended across resumes
        ratings.json    the latest fit of every player
        networks/step-N each evaluated network (a network directory: `mcts:net=` / `policy:net=`)
        gauntlet.pgn    the chess games
        progress.png    Elo with intervals against hours and learner step, mate rates, loss
A resumed run reloads games.csv and ratings.csv and never evaluates a step twice.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

import games
import models
import search as search_lib
from arena import fit_ratings
from configs import to_dict
from models import network_dir
from selfplay.config import SelfPlayConfig
from selfplay.evaluation.opponents import Opponents, Played
from selfplay.evaluation.plot import plot_progress
from selfplay.evaluation.probes import Probes
from selfplay.evaluation.store import (
    GAMES_FIELDS,
    RANDOM,
    RATINGS_FIELDS,
    append_csv,
    network_name,
    policy_name,
    read_games,
    read_reports,
    report_row,
)
from selfplay.messages import EvalReport, EvalRequest


def _scores(played: Played, name: str) -> dict[str, float]:
    """name's mean points per game against each opponent it played."""
    points: dict[str, list[float]] = {}
    for r, _ in played:
        if name in (r.white, r.black):
            opponent, score = (r.black, r.score) if r.white == name else (r.white, 1 - r.score)
            points.setdefault(opponent, []).append(score)
    return {k: float(np.mean(v)) for k, v in points.items()}


class Evaluator:
    """Evaluates networks of one run; keeps its files under runs/<name>/eval/."""

    def __init__(self, run_dir: str, cfg: SelfPlayConfig, store=None):
        """store: the parameter store's handle or Ray name (a restarted evaluator looks it up), or None
        when every request carries its variables."""
        if isinstance(store, str):
            import ray
            store = ray.get_actor(store)
        self.cfg, self.store = cfg, store
        self.dir = Path(run_dir) / "eval"
        (self.dir / "networks").mkdir(parents=True, exist_ok=True)
        self.game = games.make(cfg.game)
        self.net = models.make_network(cfg.network, self.game.spec)
        self.apply = models.evaluation_fn(self.net)
        self.search_cfg = cfg.search.for_play()  # what `mcts:net=eval/networks/step-N` plays too
        self.search = search_lib.make_search(self.game, self.apply, self.search_cfg)
        self.opponents = Opponents(self.game, cfg, self.search, self.apply, self.dir)
        self.probes = Probes(cfg, self.search, self.apply)
        self.reports = read_reports(self.dir / "ratings.csv")
        self.results = read_games(self.dir / "games.csv")

    def evaluated_steps(self) -> list[int]:
        return [r.step for r in self.reports]

    def latest(self) -> Optional[EvalReport]:
        return self.reports[-1] if self.reports else None

    def first(self) -> Optional[EvalReport]:
        return self.reports[0] if self.reports else None

    def evaluate(self, request: EvalRequest) -> Optional[EvalReport]:
        """Evaluates the request's network (or the newest published); None if that step was done."""
        start = time.perf_counter()
        step, variables = self._network(request)
        if step in self.evaluated_steps():
            return None
        name = network_name(step)
        network_dir.save(self.dir / "networks" / name, self.cfg.network, variables, game=self.cfg.game,
                         metadata={"step": step, "run": self.cfg.name, "search": to_dict(self.cfg.search)})
        played = self.opponents.play(step, variables, self.evaluated_steps())
        self.results.extend((step, r) for r, _ in played)
        append_csv(self.dir / "games.csv", GAMES_FIELDS, [
            {"step": step, "white": r.white, "black": r.black, "score": r.score, "plies": g.plies,
             "termination": g.termination} for r, g in played])
        mates = self.probes.mate_fields(variables)
        probe = self.probes.probe_fields(variables)
        fit = fit_ratings([r for _, r in self.results], anchor=RANDOM)
        rated = {p.name: p for p in fit.players}
        me, policy = rated[name], rated[policy_name(step)]
        scores, policy_scores = _scores(played, name), _scores(played, policy_name(step))
        report = EvalReport(
            step=step, hours=request.hours, positions=request.positions, games=request.games,
            loss=request.loss, elo=me.rating, elo_lower=me.lower, elo_upper=me.upper,
            score_vs_random=scores[RANDOM], seconds=time.perf_counter() - start,
            policy_elo=policy.rating, policy_elo_lower=policy.lower, policy_elo_upper=policy.upper,
            policy_score_vs_random=policy_scores[RANDOM], scores=tuple(scores.items()), **mates, **probe)
        self.reports.append(report)
        append_csv(self.dir / "ratings.csv", RATINGS_FIELDS, [report_row(report)])
        (self.dir / "ratings.json").write_text(json.dumps(
            {"anchor": RANDOM, "players": fit.table(), "advantage": fit.advantage, "draw_elo": fit.draw_elo},
            indent=1))
        plot_progress(self.dir / "progress.png", self.reports, fit, self.cfg.name)
        return report

    def _network(self, request: EvalRequest) -> tuple[int, Any]:
        if request.variables is not None:
            return request.step, request.variables
        import ray
        newest = ray.get(self.store.get_newer.remote(-1))
        return int(newest[0]), newest[1]

    def close(self) -> None:
        """Stops the ladder's engines."""
        self.opponents.close()
