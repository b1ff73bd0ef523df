"""The in-run evaluator (a Ray actor beside the self-play actors): how strong is each new network?

    evaluator = ray.remote(Evaluator).options(num_cpus=..., num_gpus=...).remote(run_dir, cfg, store)
    report = ray.get(evaluator.evaluate.remote(EvalRequest(step, hours, positions, games, loss)))

Every `evaluation.every_steps` learner steps (or `every_minutes`) the run asks for an evaluation of
the newest published network, played with the run's own search as every player plays it
(`SearchConfig.for_play`: no noise, greedy, forced results checked at every node). The evaluator
  - plays a gauntlet (arena/gauntlet.py: batched games, every start position with both colours)
    against a random mover, the previous `previous_networks` evaluated networks of the run and the
    game's engine ladder (`engines`, else the game's: games/ladders.py; chess: arena agent specs,
    from the opening book);
  - plays the same network's raw policy (greedy, no search: player policy-step-N) against the same
    fixed anchors (random and the ladder), so a run shows what the network learned apart from what
    its search finds (the untrained network's search already beats random in chess by finding mates);
  - solves `mate_puzzles` mateIn1 and mateIn2 Lichess puzzles (chess) with the search and with the
    raw policy;
  - (chess) measures the raw policy, the search and the value on the first `probe` positions of the
    probe set against Stockfish (arena/probe.py): learning shows there before it shows in games;
  - refits the ratings of every network evaluated so far from every gauntlet game (arena/ratings.py,
    BayesElo model, random = 0, 95% intervals) and writes runs/<name>/eval/:
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
import sys
import time
from pathlib import Path
from typing import Any, Optional

import jax
import numpy as np

import games
import models
import search as search_lib
from arena import gauntlet
from arena.play import append_pgn
from arena.ratings import GameResult, fit_ratings
from configs.loader import to_dict
from games import ladders
from models import network_dir
from selfplay.config import SelfPlayConfig
from selfplay.errors import RunError
from selfplay.eval_plot import plot_progress
from selfplay.eval_store import (
    GAMES_FIELDS,
    RANDOM,
    RATINGS_FIELDS,
    append_csv,
    is_run_player,
    network_name,
    policy_name,
    read_games,
    read_reports,
    report_row,
)
from selfplay.messages import EvalReport, EvalRequest


def ladder(game: str, engines: Optional[tuple[str, ...]]) -> tuple[str, ...]:
    """The fixed opponents besides random and earlier networks (`engines`, else the game's ladder);
    ValueError names a bad spec."""
    game_ladder = ladders.ladder(game)
    specs = game_ladder.opponents if engines is None else engines
    for spec in specs:
        if game_ladder.fen_uci:
            from arena.spec import parse_spec
            parse_spec(spec)
        else:
            from arena.board_players import parse_player
            parse_player(game, spec)
    return tuple(specs)


def _scores(played: list[tuple[GameResult, Any]], name: str) -> dict[str, float]:
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
        self.cfg, self.ecfg, self.store = cfg, cfg.evaluation, store
        self.dir = Path(run_dir) / "eval"
        (self.dir / "networks").mkdir(parents=True, exist_ok=True)
        self.game = games.make(cfg.game)
        self.ladder = ladders.ladder(cfg.game)  # FEN and UCI: books, engines, PGN, mate puzzles
        self.net = models.make_network(cfg.network, self.game.spec)
        self.apply = models.evaluation_fn(self.net)
        self.search_cfg = cfg.search.for_play()  # what `mcts:net=eval/networks/step-N` plays too
        self.search = search_lib.make_search(self.game, self.apply, self.search_cfg)
        self.reports = read_reports(self.dir / "ratings.csv")
        self.results = read_games(self.dir / "games.csv")
        self.key = jax.random.PRNGKey(cfg.seed + 7919)
        self._starts = None
        self._start_fens: list[str] = []
        self._engines: dict[str, Any] = {}
        self._probe = None  # the probe set, built on first use

    # -- what has been done ----------------------------------------------------------------------
    def evaluated_steps(self) -> list[int]:
        return [r.step for r in self.reports]

    def latest(self) -> Optional[EvalReport]:
        return self.reports[-1] if self.reports else None

    # -- one evaluation --------------------------------------------------------------------------
    def evaluate(self, request: EvalRequest) -> Optional[EvalReport]:
        """Evaluates the request's network (or the newest published); None if that step was done."""
        start = time.perf_counter()
        step, variables = self._network(request)
        if step in self.evaluated_steps():
            return None
        network_dir.save(self.dir / "networks" / network_name(step), self.cfg.network, variables,
                                game=self.cfg.game, metadata={"step": step, "run": self.cfg.name,
                                                              "search": to_dict(self.cfg.search)})
        name = network_name(step)
        played = self._gauntlet(name, variables)
        self.results.extend((step, r) for r, _ in played)
        append_csv(self.dir / "games.csv", GAMES_FIELDS, [
            {"step": step, "white": r.white, "black": r.black, "score": r.score, "plies": g.plies,
             "termination": g.termination} for r, g in played])
        mates_search, mates_policy = self._mates(variables)
        probe = self._probe_figures(variables)
        fit = self._fit()
        rated = {p.name: p for p in fit.players}
        me, policy = rated[name], rated[policy_name(step)]
        scores, policy_scores = _scores(played, name), _scores(played, policy_name(step))
        report = EvalReport(
            step=step, hours=request.hours, positions=request.positions, games=request.games,
            loss=request.loss, elo=me.rating, elo_lower=me.lower, elo_upper=me.upper,
            score_vs_random=scores[RANDOM], mates_search=mates_search,
            mates_policy=mates_policy, seconds=time.perf_counter() - start,
            policy_elo=policy.rating, policy_elo_lower=policy.lower, policy_elo_upper=policy.upper,
            policy_score_vs_random=policy_scores[RANDOM], scores=tuple(scores.items()), **probe)
        self.reports.append(report)
        append_csv(self.dir / "ratings.csv", RATINGS_FIELDS, [report_row(report)])
        (self.dir / "ratings.json").write_text(json.dumps(
            {"anchor": RANDOM, "players": fit.table(), "advantage": fit.advantage, "draw_elo": fit.draw_elo},
            indent=1))
        self._plot(fit)
        return report

    def _network(self, request: EvalRequest) -> tuple[int, Any]:
        if request.variables is not None:
            return request.step, request.variables
        import ray
        newest = ray.get(self.store.get_newer.remote(-1))
        return int(newest[0]), newest[1]

    def _next_key(self):
        self.key, key = jax.random.split(self.key)
        return key

    # -- the gauntlet ----------------------------------------------------------------------------
    def _start_states(self):
        if self._starts is None:
            count = self.ecfg.openings
            if self.ladder.fen_uci:
                from arena.openings import Book, book_path, pick
                boards = [o.board() for o in pick(Book(book_path(self.ecfg.book)), count, "random", self.cfg.seed)]
                self._start_fens = [b.fen() for b in boards for _ in (0, 1)]
                self._starts = gauntlet.start_states(self.game, count, None, boards=boards)
            else:
                self._starts = gauntlet.start_states(self.game, count, jax.random.PRNGKey(self.cfg.seed),
                                                     random_plies=self.ecfg.random_plies)
        return self._starts

    def _opponents(self, name: str) -> list[tuple[str, gauntlet.Mover]]:
        opponents: list[tuple[str, gauntlet.Mover]] = [(RANDOM, gauntlet.random_mover)]
        earlier = [s for s in self.evaluated_steps()][-self.ecfg.previous_networks:] if self.ecfg.previous_networks else []
        for step in earlier:
            variables = network_dir.load(self.dir / "networks" / network_name(step)).variables
            opponents.append((network_name(step), gauntlet.search_mover(self.search, variables)))
        self._start_states()
        for spec in ladder(self.cfg.game, self.ecfg.engines):
            if not self.ladder.fen_uci:
                from arena.board_players import board_mover
                opponents.append((spec, board_mover(self.cfg.game, spec, self.cfg.seed + len(self.reports))))
                continue
            engine = self._engine(spec)
            if engine is not None:
                opponents.append((spec, gauntlet.AgentMover(engine, self._start_fens)))
        return opponents

    def _engine(self, spec: str):
        """The engine of a ladder spec, started once; None (with one warning) if it cannot start."""
        if spec not in self._engines:
            from arena.spec import make_agent
            try:
                self._engines[spec] = make_agent(spec)
            except (FileNotFoundError, ValueError) as e:
                print(f"evaluation: engine '{spec}' left out of the ladder: {e}", file=sys.stderr, flush=True)
                self._engines[spec] = None
        return self._engines[spec]

    def _gauntlet(self, name: str, variables) -> list[tuple[GameResult, gauntlet.GauntletGame]]:
        """The searched network against every opponent and its raw policy against the fixed anchors
        (random, the ladder), every start position with both colours -> (rating game, game) pairs."""
        opponents = self._opponents(name)
        anchors = [(o, m) for o, m in opponents if not is_run_player(o)]
        return (self._play(name, gauntlet.search_mover(self.search, variables), opponents)
                + self._play(f"policy-{name}", gauntlet.policy_mover(self.apply, variables), anchors))

    def _play(self, name: str, me: gauntlet.Mover, opponents) -> list[tuple[GameResult, gauntlet.GauntletGame]]:
        starts = self._start_states()
        played = []
        for opponent, mover in opponents:
            for g in gauntlet.play_gauntlet(self.game, me, mover, starts, self._next_key(), self.ecfg.max_plies):
                white, black = (name, opponent) if g.network_first else (opponent, name)
                result = GameResult(white, black, g.score if g.network_first else 1 - g.score)
                played.append((result, g))
                if self.ladder.fen_uci:
                    self._write_pgn(result, g)
        return played

    def _write_pgn(self, result: GameResult, g: gauntlet.GauntletGame) -> None:
        from games import chess_bridge
        fen = self._start_fens[2 * g.start]
        score = {1.0: "1-0", 0.0: "0-1"}.get(result.score, "1/2-1/2")
        pgn = chess_bridge.actions_to_pgn(list(g.actions), fen=fen, result=score, headers={
            "Event": f"zerochess {self.cfg.name} evaluation", "White": result.white, "Black": result.black,
            "Termination": g.termination})
        append_pgn(self.dir / "gauntlet.pgn", pgn)

    # -- puzzles ---------------------------------------------------------------------------------
    def _mates(self, variables) -> tuple[Optional[float], Optional[float]]:
        if not self.ladder.fen_uci or not self.ecfg.mate_puzzles:
            return None, None
        from arena import mate_puzzles as mp
        rates = []
        for mover in (mp.search_mover(self.search, variables), mp.policy_mover(self.apply, variables)):
            solved = total = 0
            for theme in ("mateIn1", "mateIn2"):
                puzzles = mp.load_mate_puzzles(theme, self.ecfg.mate_puzzles)
                solved += mp.solve_mate_puzzles(puzzles, mover, self.cfg.seed)[0]
                total += len(puzzles)
            rates.append(solved / max(total, 1))
        return rates[0], rates[1]

    # -- the probe set ---------------------------------------------------------------------------
    def _probe_figures(self, variables) -> dict[str, float]:
        """EvalReport's probe_* fields (empty when the game is not chess or evaluation.probe is 0)."""
        if not self.ladder.fen_uci or not self.ecfg.probe:
            return {}
        from arena import probe as probe_lib
        if self._probe is None:
            self._probe = probe_lib.ProbeSet.load(limit=self.ecfg.probe)
        r = probe_lib.probe_network(self._probe, self.apply, variables, self.search, self.cfg.seed)
        return {"probe_policy": r.policy.agreement, "probe_policy_lower": r.policy.agreement_lower,
                "probe_policy_upper": r.policy.agreement_upper, "probe_search": r.search.agreement,
                "probe_search_lower": r.search.agreement_lower, "probe_search_upper": r.search.agreement_upper,
                "probe_random": r.random.agreement, "probe_regret_policy": r.policy.regret,
                "probe_regret_search": r.search.regret, "probe_value_error": r.value.error,
                "probe_value_error_lower": r.value.error_lower, "probe_value_error_upper": r.value.error_upper,
                "probe_draw_error": r.value.draw_error}

    # -- ratings and pictures --------------------------------------------------------------------
    def _fit(self):
        return fit_ratings([r for _, r in self.results], anchor=RANDOM)

    def _plot(self, fit) -> None:
        plot_progress(self.dir / "progress.png", self.reports, fit, self.cfg.name)

    def close(self) -> None:
        for agent in self._engines.values():
            if agent is not None:
                agent.close()
        self._engines.clear()


class EvaluatorHandle:
    """The run's side of the evaluator actor: when an evaluation is due, one request in flight."""

    def __init__(self, cfg: SelfPlayConfig, run_dir: Path, store, placement: dict):
        import ray
        self.cfg = cfg.evaluation
        try:
            ladder(cfg.game, self.cfg.engines)
        except ValueError as e:
            raise RunError(f"evaluation.engines: {e}") from None
        from selfplay.gpu import process_env
        self.actor = ray.remote(Evaluator).options(
            num_cpus=self.cfg.num_cpus, num_gpus=self.cfg.num_gpus, max_restarts=3,
            runtime_env={"env_vars": process_env(self.cfg.num_gpus, cfg)},
            **placement).remote(str(run_dir), cfg, store)
        try:
            done = ray.get(self.actor.evaluated_steps.remote(), timeout=300)
        except ray.exceptions.GetTimeoutError:
            raise RunError(
                f"the evaluator (evaluation.num_cpus={self.cfg.num_cpus}, num_gpus={self.cfg.num_gpus}) found no "
                "free Ray resources in 5 minutes: raise ray_num_cpus or set evaluation.num_cpus=0") from None
        self.latest: Optional[EvalReport] = ray.get(self.actor.latest.remote())
        self.last_step = done[-1] if done else None  # the step of the last request (or evaluation)
        self.last_time = time.monotonic()
        self._in_flight = None

    def due(self, step: int) -> bool:
        if self._in_flight is not None:
            return False
        if self.last_step is None:
            return self.cfg.at_start or step >= self.cfg.every_steps
        by_minutes = self.cfg.every_minutes and time.monotonic() - self.last_time >= 60 * self.cfg.every_minutes
        return step >= self.last_step + self.cfg.every_steps or bool(by_minutes)

    def request(self, request: EvalRequest) -> None:
        self._in_flight = self.actor.evaluate.remote(request)
        self.last_step, self.last_time = request.step, time.monotonic()

    def poll(self, timeout: float = 0.0) -> Optional[EvalReport]:
        """The report of the request in flight, if it finished (waits up to `timeout` seconds)."""
        import ray
        if self._in_flight is None or not ray.wait([self._in_flight], timeout=timeout)[0]:
            return None
        ref, self._in_flight = self._in_flight, None
        try:
            report = ray.get(ref)
        except ray.exceptions.RayTaskError as e:  # a bug or bad data in one evaluation: the run goes on
            print(f"evaluation at step {self.last_step} failed: {e.cause!r}", file=sys.stderr, flush=True)
            return None
        except ray.exceptions.RayActorError as e:  # its process died: Ray restarts it (max_restarts)
            print(f"the evaluator died during the evaluation at step {self.last_step} ({type(e).__name__}); "
                  "Ray restarts it and the next evaluation is at the next due step", file=sys.stderr, flush=True)
            return None
        if report is not None:
            self.latest = report
        return report

    def finish(self, final: EvalRequest) -> list[EvalReport]:
        """At the stop: the evaluation in flight, then the final network's if `at_end` and new."""
        reports = []
        if self._in_flight is not None:
            report = self.poll(timeout=None)
            reports += [report] if report else []
        if self.cfg.at_end and (self.latest is None or self.latest.step < final.step):
            self.request(final)
            report = self.poll(timeout=None)
            reports += [report] if report else []
        return reports

    def close(self) -> None:
        import ray
        try:
            ray.get(self.actor.close.remote(), timeout=30)  # stops its engines
        except ray.exceptions.RayError:
            pass  # already gone (Ctrl-C of the process group)
        finally:
            ray.kill(self.actor)
