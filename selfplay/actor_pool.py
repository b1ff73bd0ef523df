"""The run's self-play actors: started spread over the cluster, two calls queued each (an actor
starts its next call as soon as one ends, without waiting for the run's loop), their finished calls
taken, their deaths and restarts.

    pool = ActorPool(cfg, names, step, env)  # the actors, two `play` calls queued each
    done, _ = ray.wait(pool.calls() + ...)   # the loop waits on them (and on the learner)
    report = pool.take(ref)                  # a PlayReport, the actor sent back to play; None: not ours, or died
    seen = pool.count_restarts(seen)         # Ray's restart count per actor, one stderr line per new restart

A call that failed because the actor's process died (kill -9, out of host memory, a node lost): Ray
restarts the actor (up to actors.max_restarts) and it is sent back to play; the games it finished
are in replay (acknowledged before it reports), only its games in progress are lost. Past
max_restarts the run goes on without it. A call that ran out of GPU memory is one RunError line.
"""
from __future__ import annotations

import sys
from typing import Optional

import ray

from actors import SelfPlayActor
from runtime import out_of_memory_line
from selfplay import cluster
from selfplay.config import SelfPlayConfig
from selfplay.errors import RunError
from selfplay.messages import PlayReport

MEMORY_FIX = ("lower actors.games_per_actor or search.num_simulations, or give each actor a larger "
              "share (actors.num_gpus, gpu_memory, driver_gpu_share)")


class ActorPool:
    """The self-play actors of one session and their calls in flight."""

    def __init__(self, cfg: SelfPlayConfig, names: dict[str, str], step: int, env: dict[str, str]):
        """names: the Ray names of the replay buffer and the parameter store (`cluster.actor_names`),
        which an actor Ray restarts looks up; step: the learner step (seeds the actors); env: each
        actor's environment (prepare.ProcessEnvs.actor)."""
        self.cfg = cfg
        actor_cls = ray.remote(SelfPlayActor)
        self.actors = [actor_cls.options(num_cpus=cfg.actors.num_cpus, num_gpus=cfg.actors.num_gpus,
                                         max_restarts=cfg.actors.max_restarts, runtime_env={"env_vars": env},
                                         scheduling_strategy="SPREAD").remote(
                           i, cfg.game, cfg.network, cfg.search, cfg.actors, names["replay"], names["store"],
                           cfg.seed * 1000 + step + i, None)
                       for i in range(cfg.actors.num_actors)]
        self.plays = {self._play(a): a for a in self.actors for _ in range(2)}  # call ref -> actor

    def calls(self) -> list:
        """The refs of the calls in flight."""
        return list(self.plays)

    def take(self, ref) -> Optional[PlayReport]:
        """The report of a finished call, its actor sent back to play; None when `ref` is not an
        actor's call or the actor died (sent back when Ray restarts it)."""
        actor = self.plays.pop(ref, None)
        if actor is None:
            return None
        try:
            report: PlayReport = ray.get(ref)
        except ray.exceptions.RayActorError as e:  # its process died (kill -9, OOM, node lost)
            self._lost(actor, e)
            return None
        except ray.exceptions.RayTaskError as e:
            line = out_of_memory_line(e, f"self-play actor {self.actors.index(actor)}", MEMORY_FIX)
            if line is None:
                raise
            raise RunError(line) from None
        self.plays[self._play(actor)] = actor
        return report

    def count_restarts(self, seen: list[int]) -> list[int]:
        """Ray's restart count of each actor (its GCS record), at least `seen`; one stderr line per
        restart not seen before. `seen` unchanged where Ray does not answer."""
        try:
            counts = [int(r.get("NumRestarts", 0)) for r in cluster.actor_records(self.actors)]
        except Exception:  # best effort: a Ray internal, and after Ctrl-C Ray may be gone
            return seen
        seen = seen + [0] * (len(counts) - len(seen))
        for index, (n, before) in enumerate(zip(counts, seen)):
            if n > before:
                print(f"self-play actor {index} died and Ray restarted it ({n} restart(s)); its games in "
                      "progress were lost, the finished ones are in replay", file=sys.stderr)
        return [max(n, before) for n, before in zip(counts, seen)]

    def kill(self) -> None:
        for a in self.actors:
            ray.kill(a)

    def _play(self, actor):
        return actor.play.remote(self.cfg.actors.plies_per_call)

    def _lost(self, actor, error: BaseException) -> None:
        """An actor's call failed because its process died: sent back to play unless Ray says it is
        dead for good (past actors.max_restarts); the line says why it died where Ray knows."""
        index = self.actors.index(actor)
        try:
            dead = cluster.actor_records([actor])[0].get("State") == "DEAD"
        except Exception:  # no answer: assume Ray restarts it (a call to a dead actor fails at once)
            dead = False
        if not dead:
            self.plays[self._play(actor)] = actor
            return
        if actor in self.plays.values():
            return  # its other queued call fails too: one line, then
        why = cluster.error_line(error)
        print(f"self-play actor {index} died and will not be restarted (actors.max_restarts="
              f"{self.cfg.actors.max_restarts}): the run goes on without it{f' ({why})' if why else ''}",
              file=sys.stderr)
        if not self.plays:
            raise RunError(f"every self-play actor died more than actors.max_restarts times"
                           f"{f', the last with: {why}' if why else ''}; the Ray worker logs "
                           "(/tmp/ray/session_latest/logs) say more")
