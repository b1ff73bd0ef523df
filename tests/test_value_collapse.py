"""bench/value_collapse.py, the learner-only harness of the GPU run's value collapse: it runs (tiny
network, ~50 steps, short random games), feeds the learner what self-play would (versions that age,
q from the network that played), and reports a value head forced dead as collapsed and a healthy one not."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from by_path import load_module

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--blocks", "1", "--filters", "8", "--batch", "32", "--steps", "50", "--delay", "20", "--window", "2000",
        "--min-positions", "200", "--pool-games", "8", "--max-plies", "40", "--health-every", "10",
        "--health-min-steps", "20", "--series-every", "25",
        "--lr", "0.005,0.001,0.0002"]  # at the preset's 0.05 this 1x8 head saturates its tanh within 50 steps


@pytest.fixture(scope="module")
def bench_module():
    return load_module(ROOT / "bench" / "value_collapse.py", "value_collapse")


@pytest.fixture(scope="module")
def harness(bench_module, tmp_path_factory):
    cache = tmp_path_factory.mktemp("value_collapse")  # the random games, shared by both runs

    def run(*extra, capsys):
        assert bench_module.main([*TINY, "--cache", str(cache), *extra]) == 0
        return json.loads(capsys.readouterr().out)
    return run


def test_a_dead_value_head_is_reported_collapsed_and_a_healthy_one_not(harness, capsys, tmp_path):
    healthy = harness(capsys=capsys)
    dead = harness("--dead-value-head", capsys=capsys)
    s = healthy["settings"]
    assert s["slots"] * s["plies_per_step"] == pytest.approx(16)  # batch 32 / train ratio 2 per step
    assert s["mean_game_plies"] == 40 and s["pool_positions"] == 8 * 40 and s["pool_endings"]["capped"] == 1.0
    assert [p["step"] for p in healthy["series"]] == [25, 50]
    # the learner trains on games played by older networks: ages grow with the lifetime (20 steps)
    assert 0 < healthy["series"][0]["sample_age"] < healthy["series"][1]["sample_age"]
    assert healthy["value_health_start"]["step"] == 10 and healthy["value_untrained"]["value_active"] > 0.2

    assert not healthy["collapsed"] and healthy["collapse_step"] is None
    assert all(p["value_active"] > 0.2 and p["value_std"] > 1e-3 for p in healthy["series"])
    assert dead["collapsed"] and dead["collapse_step"] == 30  # the first check 20 steps past the start
    assert all(p["value_active"] == 0.0 and p["value_std"] < 1e-6 for p in dead["series"])
    assert dead["value_untrained"]["value_active"] == 0.0 and not dead["value_std_stays_above_untrained"]

    # the A/B's report over both, through files as the queue leaves them (one unfinished)
    folder = tmp_path / "ab"
    folder.mkdir()
    (folder / "healthy-0.json").write_text(json.dumps(healthy))
    (folder / "dead_head-0.json").write_text(json.dumps(dead))
    (folder / "dead_head-1.json").write_text('{"settings": {')  # a run still writing
    table = load_module(ROOT / "bench" / "value_collapse_report.py", "value_collapse_report")
    assert table.main([str(folder), "--floor", "1e-3", "--png", str(folder / "ab.png")]) == 0
    out = json.loads(capsys.readouterr().out)["arms"]
    assert out["healthy"]["alive"] == "1/1" and out["dead_head"]["alive"] == "0/1"
    assert out["dead_head"]["seeds"][0]["collapse_step"] == 30 and out["dead_head"]["seeds"][0]["std_min"] < 1e-6
    assert (folder / "ab.png").stat().st_size > 10_000
    assert table.main([str(folder), "--floor", "1e-3", "--markdown"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("| arm | alive") and len(rows) == 4 and rows[2].startswith("| dead_head | 0/1 | 30 |")


def test_random_games_keep_the_result_of_a_game_that_ended_before_the_others(bench_module, tmp_path):
    """pgx zeroes the rewards of a finished game stepped again: z must come from the ply that ended it.
    In tic-tac-toe a decisive game is won by the player who made its last move."""
    pool = bench_module.random_games(64, 9, seed=0, cache=tmp_path, game_name="tic_tac_toe")
    ends = np.cumsum(pool["lengths"]) - 1  # each game's last position (game-major)
    decisive = pool["ending"][ends] == 0
    assert 10 < decisive.sum() < 64 and len(set(pool["lengths"][decisive])) > 1  # games end at different plies
    assert (pool["z"][ends][decisive] == 1.0).all()  # the last mover won
    assert (pool["z"][ends][~decisive] == 0.0).all()
    assert set(np.unique(pool["z"])) <= {-1.0, 0.0, 1.0} and (pool["z"] == -1.0).any()


def test_the_mate_taking_mover_mates_where_it_can_and_is_uniform_elsewhere(bench_module):
    """--pool-takes-mates: from Scholar's-mate positions the mover plays Qxf7# for every key; from the
    start position it plays every one of the 20 moves (python-chess names the mate)."""
    import chess
    import jax

    import games
    from games import chess_bridge
    game = games.make("chess")
    move = jax.jit(bench_module.mover(game, takes_mates=True))
    mate_in_one = "r1bqkbnr/pppp1ppp/2n5/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 2 3"  # Qh5xf7#
    for white_player in (0, 1):
        states = chess_bridge.fens_to_states([mate_in_one] * 16, white_player=white_player)
        actions = np.asarray(move(states, jax.random.PRNGKey(white_player)))
        assert {chess_bridge.pgx_action_to_uci(int(a), True) for a in actions} == {"h5f7"}
    start = chess_bridge.fens_to_states([chess.STARTING_FEN] * 400)
    played = {chess_bridge.pgx_action_to_uci(int(a), True) for a in np.asarray(move(start, jax.random.PRNGKey(2)))}
    assert len(played) == 20
