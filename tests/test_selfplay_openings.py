"""Opening diversity in self-play: a book line's moves (actors.opening_book, selfplay/openings.py),
then actors.random_opening_plies uniform random legal moves, each position still searched and its
policy target recorded; after them the actor plays the search's move."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from local_actor import tic_tac_toe_actor

import games
from actors.config import ActorConfig
from actors.selfplay_actor import SelfPlayActor
from arena.play.openings import Book, book_path
from configs.loader import ConfigError, load
from games.chess_bridge import actions_to_board
from selfplay.config import SelfPlayConfig
from selfplay.openings import book_lines

ROOT = Path(__file__).resolve().parents[1]
GAMES = 64


def deterministic_actor(random_plies: int, lines: tuple = ()) -> tuple[SelfPlayActor, list]:
    """A tic-tac-toe actor whose search is deterministic (no root noise, greedy): without random
    plies every game of the batch plays the same moves. Returns it and the list its finished games reach."""
    cfg = load(SelfPlayConfig, ROOT / "configs/tic_tac_toe.yaml",
               ["search.root_noise=false", "search.temperature_plies=0",
                f"actors.random_opening_plies={random_plies}", f"actors.games_per_actor={GAMES}"])
    actor, records = tic_tac_toe_actor(cfg, seed=3, opening_lines=lines)
    searched = []

    def recording(*args):  # keeps the search's own choice of every ply
        out = search(*args)
        searched.append(np.asarray(out.action))
        return out
    search = actor.search
    actor.search = recording
    actor.searched = searched
    return actor, records


def test_without_random_plies_a_deterministic_search_plays_one_opening(local_ray):  # noqa: F811
    actor, _ = deterministic_actor(0)
    actor.play(2)
    first_two = {tuple(log.actions) for log in actor.logs}
    assert len(first_two) == 1


def test_random_plies_are_uniform_legal_moves_then_the_search_plays(local_ray):  # noqa: F811
    actor, records = deterministic_actor(2)
    actor.play(3)
    moves = np.array([log.actions for log in actor.logs])  # [GAMES, 3]
    for ply in (0, 1):
        # uniform over the legal squares: 9 at ply 0, 8 at ply 1; not the search's single choice
        counts = np.bincount(moves[:, ply], minlength=9)
        assert (counts > 0).sum() >= 6 and counts.max() <= 20
        assert np.any(moves[:, ply] != actor.searched[ply])
    assert np.all(moves[:, 0] != moves[:, 1])  # the second random move is legal: not the taken square
    np.testing.assert_array_equal(moves[:, 2], actor.searched[2])  # ply 2: the search's move
    # every ply, random ones included, keeps the search's policy target for training
    assert all(len(log.policy) == 3 and all(p.sum() == pytest.approx(1.0, abs=1e-5) for p in log.policy)
               for log in actor.logs)
    actor.play(9)  # every game ends; the records replay under the rules (legal moves only)
    game = games.make("tic_tac_toe")
    init, step, legal_mask = jax.jit(game.init), jax.jit(game.step), jax.jit(game.legal_mask)  # not op by op
    for rec in records:
        state = init(jnp.asarray(rec.init_key)[None])
        for a in rec.actions:
            assert bool(np.asarray(legal_mask(state))[0, a])
            state = step(state, jnp.asarray([a]))


def test_negative_random_plies_is_a_config_error():
    with pytest.raises((ConfigError, ValueError), match="random_opening_plies"):
        load(SelfPlayConfig, ROOT / "configs/tic_tac_toe.yaml", ["actors.random_opening_plies=-1"])
    assert ActorConfig(random_opening_plies=4).random_opening_plies == 4


def test_book_lines_replay_to_the_books_positions():
    book = Book(book_path("lichess_chess_openings/c.tsv"))
    lines = book_lines("lichess_chess_openings/c.tsv", "chess")
    assert len(lines) == len(book) > 1000
    for i in range(0, len(book), 97):  # python-chess replays our pgx ids to the book's own position
        assert actions_to_board(lines[i].tolist()).fen() == book[i].board().fen()
    every = book_lines("lichess_chess_openings", "chess")  # the folder: its five files, a to e
    assert len(every) == sum(len(Book(f)) for f in book_path("lichess_chess_openings").glob("*.tsv")) > 3000


@pytest.mark.parametrize("book, game, problem", [
    ("lichess_chess_openings/c.tsv", "connect_four", "is for chess"),
    ("2moves_v1.epd", "chess", "not the initial position"),
    ("no_such_book.pgn", "chess", "not a file"),
])
def test_unusable_books_are_one_clear_error(book, game, problem):
    with pytest.raises(ValueError, match=problem):
        book_lines(book, game)


def test_a_folder_without_books_is_one_clear_error(tmp_path):
    (tmp_path / "notes.txt").write_text("no book here")
    with pytest.raises(ValueError, match="holds no .pgn or .tsv book"):
        book_lines(str(tmp_path), "chess")


def test_games_start_on_a_book_line_then_random_plies_then_the_search(local_ray):  # noqa: F811
    lines = (np.array([4, 0], np.int32), np.array([8], np.int32))  # tic-tac-toe cells
    actor, _ = deterministic_actor(1, lines)
    actor.play(4)
    seen = set()
    for log in actor.logs:
        line = next(line for line in lines if np.array_equal(log.actions[:len(line)], line))
        seen.add(len(line))
        random_ply = len(line)  # one random ply after the line, then the search from the next ply
        assert log.actions[random_ply] not in line
        assert len(log.policy) == 4
    assert seen == {1, 2}  # both lines drawn
    searched = np.array(actor.searched)  # [4, GAMES] the search's choices
    for b, log in enumerate(actor.logs):
        start = len(log.opening) + 1
        np.testing.assert_array_equal(log.actions[start:], searched[start:, b])


def test_selfplay_cli_rejects_a_book_for_another_game_before_starting(tmp_path):
    result = subprocess.run(
        [sys.executable, "selfplay.py", "--config", "configs/connect_four.yaml", "--set",
         f"runs_dir={tmp_path}", "actors.opening_book=lichess_chess_openings/c.tsv"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "is for chess" in lines[0] and "Traceback" not in result.stderr
    assert not any(tmp_path.iterdir())  # no run directory left behind
