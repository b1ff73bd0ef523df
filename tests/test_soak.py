"""bench/soak.py's figures: the object store's live bytes from a raylet dump, and growth between peaks."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import soak  # noqa: E402

# The resource line of a raylet's debug_state.txt (Ray 2.60) with one 10,000,254-byte object alive.
DUMP = """NodeManager:
Node ID: c10ef994865e7ba40ad96b3f426c3dd6ac47efcc110aa84aa8d4fbc4
Local id: -4926944575323094693 Local resources: {"total":{node:192.0.2.2: [10000], memory: [175677128710000], \
CPU: [10000], object_store_memory: [75290198010000], node:__internal_head__: [10000]}, "available": \
{node:192.0.2.2: [10000], memory: [175677128710000], CPU: [10000], object_store_memory: [75190195470000], \
node:__internal_head__: [10000]}, "labels":{"ray.io/node-id":"c10ef"}} is_draining: 0 is_idle: 0 Cluster \
resources (at most 20 nodes are shown): node id: -4926944575323094693{"total":{object_store_memory: 1}, \
"available": {object_store_memory: 2}}
"""


def test_object_store_bytes_are_total_minus_available_of_the_local_node():
    assert soak.plasma_bytes_in_use(DUMP) == 10_000_254


def test_a_dump_without_the_resource_line_reads_as_unknown():
    assert soak.plasma_bytes_in_use("NodeManager:\nNode ID: x\n") is None


def test_raylet_session_dir_from_its_command_line():
    argv = ["/x/raylet", "--store_socket_name=/tmp/ray/s/sockets/plasma_store", "--session_dir=/tmp/ray/s"]
    assert soak._session_dir(argv) == Path("/tmp/ray/s")
    assert soak._session_dir(["/x/raylet"]) is None


def _samples(values: list[int | None], minutes_apart: float = 1.0) -> list[dict]:
    figures = soak.MEMORY_FIGURES + soak.REPORTED
    return [{"t": 60 * minutes_apart * i, "actors_rss": {"1": 1}, **{k: v for k in figures}}
            for i, v in enumerate(values)]


def test_growth_compares_peaks_so_a_flickering_figure_does_not_read_as_a_leak():
    # 0 or one 8 MiB object at any instant: single samples would say -100% or undefined
    g = soak.growth(_samples([8, 0, 8, 0, 0, 0, 0, 8, 0, 0]), from_minute=0, span_minutes=2)
    assert g["object_store_bytes"] == {"from": 8, "to": 8, "growth": 0.0}


def test_growth_sees_a_steady_climb():
    g = soak.growth(_samples([100, 101, 102, 110, 120, 130, 140]), from_minute=1, span_minutes=0)
    assert (g["driver_rss"]["from"], g["driver_rss"]["to"]) == (101, 140)
    assert g["driver_rss"]["growth"] == round(39 / 101, 4)


def test_a_figure_never_read_has_no_growth_and_fails_the_goal():
    g = soak.growth(_samples([None, None, None]), from_minute=0)
    assert g["object_store_bytes"]["growth"] is None
    assert not soak.meets_goal(g)


def test_goal_is_every_memory_figure_under_ten_percent_and_the_raylet_is_reported_only():
    assert "raylet_rss" in soak.REPORTED and "raylet_rss" not in soak.MEMORY_FIGURES
    assert soak.meets_goal(soak.growth(_samples([100, 105, 109]), from_minute=0, span_minutes=0))
    assert not soak.meets_goal(soak.growth(_samples([100, 105, 110]), from_minute=0, span_minutes=0))
