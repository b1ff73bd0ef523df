"""Soak test of a self-play run (not CI): memory and disk over time, one JSON at the end.

    .venv/bin/python bench/soak.py --config configs/chess_cpu.yaml --minutes 60        # runs selfplay.py
    .venv/bin/python bench/soak.py --attach 12345 --minutes 60                        # a running driver
    .venv/bin/python bench/soak.py --config configs/tic_tac_toe.yaml --minutes 1.5 --interval 10 \
        --from-minute 0.5 --span-minutes 0.25 --set runs_dir=/tmp/soak                # a quick check
    .venv/bin/python bench/soak.py --idle-ray 5          # the raylet of a bare Ray: its creep without us

Every `--interval` seconds (default 60) it samples
    driver_rss        the selfplay.py driver (with `learner.placement: driver` the learner is in it)
    replay_rss        the replay buffer actor           (process title ray::ReplayBuffer...)
    learner_rss       the learner actor, or the driver  (ray::Learner...)
    actors_rss        each self-play actor by pid, and their total   (ray::SelfPlayActor...)
    raylet_rss        Ray's raylet (reported without a goal: a bare Ray's raylet grows too, `--idle-ray`)
    object_store_bytes  bytes of live objects in Ray's object store (plasma): the raylet's total minus
                      available `object_store_memory`, read from the `debug_state.txt` it rewrites every
                      10 s in its session's logs (no Ray client: attaching must not join the cluster)
    shm_bytes         /dev/shm in use: the pages plasma has touched, a high-water mark that never
                      shrinks; reported without a goal (it was the object store figure before)
    replay_disk_bytes   the files under runs/<name>/replay/
Ray's worker processes are descendants of a driver that started local Ray (not with --ray-address:
there only the driver and the replay directory are sampled). It stops when the driver exits or after
`--minutes` (then, in run mode, it interrupts the driver as Ctrl-C does and waits for its summary),
and prints one JSON object: the samples and, per figure, its growth from the first sample at or after
`--from-minute` (default 10: the replay window is full by then in chess_cpu) to the last sample that
still has as many self-play actors (samples taken during the shutdown, actors gone, do not count).
Growth compares each figure's peak over the window's first 5 minutes with its peak over the last 5
(`--span-minutes`). Goal: growth < 10% for every memory figure (`ok`); replay_disk_bytes grows with the games stored
(unless replay.disk_positions is set) and is reported without a goal.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The figures the goal holds to (growth < GOAL): the driver, the replay buffer, the actors, the learner, the object store.
MEMORY_FIGURES = ("driver_rss", "replay_rss", "learner_rss", "actors_rss_total", "object_store_bytes")
# Growth reported without a goal: the raylet is Ray's own process, and a bare Ray's grows with nothing of
# zerochess running (`--idle-ray`); /dev/shm is a high-water mark; replay disk grows with the games kept.
REPORTED = ("raylet_rss", "shm_bytes", "replay_disk_bytes")
# The raylet's resource line: "Local resources: {"total":{... object_store_memory: [N] ...}, "available": {...}}",
# quantities in units of 1/10000 (Ray's fixed point).
_STORE_TOTAL = re.compile(r'Local resources: \{"total":\{[^}]*?object_store_memory: \[(\d+)\]')
_STORE_AVAILABLE = re.compile(r'Local resources: .*?"available": \{[^}]*?object_store_memory: \[(\d+)\]')
GOAL = 0.10  # growth allowed once the replay window is full
SPAN_MINUTES = 5.0  # growth compares the peaks of the window's first and last 5 minutes


def run_dir_of_driver(proc: psutil.Process) -> Path:
    """runs/<name>/ of a running selfplay.py, from its command line and working directory."""
    from configs import load
    from selfplay import SelfPlayConfig

    argv = proc.cmdline()
    script = next(i for i, a in enumerate(argv) if a.endswith("selfplay.py"))
    import importlib.util  # selfplay.py (the CLI) by path: `selfplay` is the package
    spec = importlib.util.spec_from_file_location("selfplay_cli", ROOT / "selfplay.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    args = cli.parse_args(argv[script + 1:])
    cwd = Path(proc.cwd())
    cfg = load(SelfPlayConfig, cwd / args.config, args.overrides)
    return cwd / cfg.runs_dir / cfg.name


def _argv(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


def _title(p: psutil.Process) -> str:
    return " ".join(_argv(p))


def _rss(p: psutil.Process) -> int:
    try:
        return p.memory_info().rss
    except psutil.Error:
        return 0


def _dir_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def plasma_bytes_in_use(debug_state: str) -> int | None:
    """Bytes held by live objects in the object store, from the text of a raylet's debug_state.txt
    (None when the line is not there: an older or newer Ray, or a dump not written yet)."""
    total, available = _STORE_TOTAL.search(debug_state), _STORE_AVAILABLE.search(debug_state)
    if not (total and available):
        return None
    return (int(total.group(1)) - int(available.group(1))) // 10_000


def _session_dir(raylet_argv: list[str]) -> Path | None:
    flag = next((a for a in raylet_argv if a.startswith("--session_dir=")), None)
    return Path(flag.split("=", 1)[1]) if flag else None


def _object_store_bytes(raylet_argv: list[str]) -> int | None:
    session = _session_dir(raylet_argv)
    try:
        return plasma_bytes_in_use((session / "logs" / "debug_state.txt").read_text()) if session else None
    except OSError:
        return None


def sample(driver: psutil.Process, run_dir: Path, started: float) -> dict:
    """One sample of every figure (bytes)."""
    try:
        procs = driver.children(recursive=True)
    except psutil.Error:
        procs = []
    titled = [(p, _title(p)) for p in procs]
    actors = {str(p.pid): _rss(p) for p, t in titled if t.startswith("ray::SelfPlayActor")}
    learners = [_rss(p) for p, t in titled if t.startswith("ray::Learner")]
    driver_rss = _rss(driver)
    raylets = [p for p, t in titled if "/raylet" in t.split(" ")[0]]
    return {
        "t": round(time.monotonic() - started, 1),
        "driver_rss": driver_rss,
        "replay_rss": sum(_rss(p) for p, t in titled if t.startswith("ray::ReplayBuffer")),
        "learner_rss": sum(learners) if learners else driver_rss,
        "actors_rss": actors,
        "actors_rss_total": sum(actors.values()),
        "raylet_rss": sum(_rss(p) for p in raylets),
        "object_store_bytes": _object_store_bytes(_argv(raylets[0])) if raylets else None,
        "shm_bytes": shutil.disk_usage("/dev/shm").used if os.path.isdir("/dev/shm") else 0,
        "replay_disk_bytes": _dir_bytes(run_dir / "replay"),
    }


def growth(samples: list[dict], from_minute: float, span_minutes: float = SPAN_MINUTES) -> dict:
    """Per figure: its peak over the first `span_minutes` from `from_minute` on, its peak over the last
    `span_minutes`, and the growth between them. Peaks, not single samples: the object store holds
    0 or one ~8 MiB object (a batch, the weights) at any instant, and one sample says which."""
    later = [s for s in samples if s["t"] >= 60 * from_minute]
    if later:  # the run's loop only: shutdown stops the actors first (a restarted actor keeps the count)
        later = [s for s in later if len(s["actors_rss"]) >= len(later[0]["actors_rss"])]
    if len(later) < 2:
        return {}
    span = 60 * span_minutes
    head = [s for s in later if s["t"] <= later[0]["t"] + span]
    tail = [s for s in later if s["t"] >= later[-1]["t"] - span]
    out = {}
    for key in MEMORY_FIGURES + REPORTED:
        a, b = _peak(head, key), _peak(tail, key)
        out[key] = {"from": a, "to": b, "growth": round((b - a) / a, 4) if a and b is not None else None}
    out["window"] = {"from_t": later[0]["t"], "to_t": later[-1]["t"], "span_s": span}
    return out


def meets_goal(g: dict) -> bool:
    """Every memory figure grew < GOAL; one that could not be read (growth None) is not a pass."""
    return bool(g) and all(g[k]["growth"] is not None and g[k]["growth"] < GOAL for k in MEMORY_FIGURES)


def _peak(samples: list[dict], key: str) -> int | None:
    values = [s[key] for s in samples if s.get(key) is not None]
    return max(values) if values else None


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def soak(driver: psutil.Process, run_dir: Path, minutes: float, interval: float, stop_driver: bool) -> list[dict]:
    """Samples until the driver exits (or `minutes` pass: then, with `stop_driver`, it is sent SIGINT
    and awaited). Ctrl-C stops sampling (and reaches a driver started in this process group too)."""
    started = time.monotonic()
    deadline = started + 60 * minutes if minutes else None
    samples = []
    try:
        while _alive(driver):
            samples.append(sample(driver, run_dir, started))
            s = samples[-1]
            print(f"[{s['t']:7.0f}s] driver {s['driver_rss'] >> 20} MiB  replay {s['replay_rss'] >> 20} MiB  "
                  f"actors {s['actors_rss_total'] >> 20} MiB ({len(s['actors_rss'])})  "
                  f"raylet {s['raylet_rss'] >> 20} MiB  object store {(s['object_store_bytes'] or 0) / 2**20:.1f} MiB  "
                  f"shm {s['shm_bytes'] >> 20} MiB  replay disk {s['replay_disk_bytes'] >> 20} MiB",
                  file=sys.stderr, flush=True)
            if deadline and time.monotonic() >= deadline:
                break
            until = time.monotonic() + interval
            while _alive(driver) and time.monotonic() < min(until, deadline or until):
                time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    if stop_driver and _alive(driver):
        if deadline:
            driver.send_signal(signal.SIGINT)
        end = time.monotonic() + 180
        while _alive(driver) and time.monotonic() < end:
            time.sleep(0.5)
        if _alive(driver):
            driver.kill()
    return samples


def idle_ray(minutes: float, interval: float) -> dict:
    """The control for raylet_rss: a bare local Ray (one CPU, one actor called every 20 s, nothing of
    zerochess) sampled for `minutes`; its raylet's RSS over time and the growth from minute 1."""
    import ray

    ray.init(address="local", num_cpus=1, include_dashboard=False, object_store_memory=256 << 20)

    @ray.remote(num_cpus=0)
    class Ping:
        def ping(self) -> int:
            return 1

    ping = Ping.remote()
    raylet = next(p for p in psutil.Process().children(recursive=True) if "/raylet" in _title(p).split(" ")[0])
    started, samples, next_call = time.monotonic(), [], 0.0
    while time.monotonic() - started < 60 * minutes:
        t = time.monotonic() - started
        if t >= next_call:
            ray.get(ping.ping.remote())
            next_call += 20
        if not samples or t - samples[-1]["t"] >= interval:
            samples.append({"t": round(t, 1), "raylet_rss": _rss(raylet)})
        time.sleep(0.5)
    ray.shutdown()
    later = [s for s in samples if s["t"] >= 60]
    a, b = later[0]["raylet_rss"], later[-1]["raylet_rss"]
    return {"idle_ray_minutes": minutes, "samples": samples,
            "raylet_rss": {"from": a, "to": b, "growth": round((b - a) / a, 4),
                           "mib_per_minute": round((b - a) / 2**20 / ((later[-1]["t"] - later[0]["t"]) / 60), 3)}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", help="run mode: the selfplay.py preset (e.g. configs/chess_cpu.yaml)")
    p.add_argument("--set", dest="overrides", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="run mode: selfplay.py overrides (repeatable)")
    p.add_argument("--attach", type=int, metavar="PID", help="sample a running selfplay.py driver instead")
    p.add_argument("--run-dir", help="attach mode: runs/<name>/ (default: from the driver's command line)")
    p.add_argument("--minutes", type=float, default=0.0,
                   help="stop sampling after this long (run mode: the run's max_minutes; default 60 there)")
    p.add_argument("--interval", type=float, default=60.0, help="seconds between samples")
    p.add_argument("--from-minute", type=float, default=10.0, help="growth is measured from this minute on")
    p.add_argument("--span-minutes", type=float, default=SPAN_MINUTES,
                   help="growth compares the peaks over the first and the last this many minutes")
    p.add_argument("--idle-ray", type=float, metavar="MINUTES",
                   help="the raylet's control instead: a bare local Ray sampled this long (>= 2 minutes)")
    args = p.parse_args(argv)
    if args.idle_ray:
        print(json.dumps(idle_ray(max(args.idle_ray, 2.0), min(args.interval, 20.0))))
        return 0
    if bool(args.config) == bool(args.attach):
        p.error("give --config (run selfplay.py) or --attach PID")
    log = None
    if args.attach:
        try:
            driver = psutil.Process(args.attach)
        except psutil.NoSuchProcess:
            print(f"soak.py: no process {args.attach}", file=sys.stderr)
            return 2
        run_dir = Path(args.run_dir) if args.run_dir else run_dir_of_driver(driver)
        samples = soak(driver, run_dir, args.minutes, args.interval, stop_driver=False)
    else:
        from configs import ConfigError, load
        from selfplay import SelfPlayConfig
        minutes = args.minutes or 60.0
        overrides = [f"name=soak-{time.strftime('%Y%m%d-%H%M%S')}", *args.overrides, f"max_minutes={minutes}"]
        try:
            cfg = load(SelfPlayConfig, args.config, overrides)
        except ConfigError as e:
            print(f"soak.py: config error: {e}", file=sys.stderr)
            return 2
        run_dir = Path(cfg.runs_dir) / cfg.name
        log = Path(tempfile.gettempdir()) / f"{cfg.name}.log"
        with open(log, "w") as out:
            cmd = [sys.executable, str(ROOT / "selfplay.py"), "--config", args.config, "--no-progress"]
            for o in overrides:
                cmd += ["--set", o]
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=os.getcwd())
        driver = psutil.Process(proc.pid)
        # max_minutes stops the run's loop; sampling goes on until it exits (checkpoint, shutdown)
        samples = soak(driver, run_dir, 0.0, args.interval, stop_driver=True)
        proc.wait()
    result = {"run_dir": str(run_dir), "interval_s": args.interval, "from_minute": args.from_minute,
              "driver_log": str(log) if log else None, "samples": samples,
              "span_minutes": args.span_minutes,
              "growth": growth(samples, args.from_minute, args.span_minutes), "goal": f"growth < {GOAL:.0%} for {list(MEMORY_FIGURES)}"}
    g = result["growth"]
    result["ok"] = meets_goal(g)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
