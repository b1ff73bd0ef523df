"""Opening diversity in self-play: a book line's moves (actors.opening_book, selfplay/openings.py),
then actors.random_opening_plies uniform random legal moves, each position still searched and its
policy target recorded; after them the actor plays the search's move."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import chess
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


def deterministic_actor(random_plies: int, lines: tuple = (), *overrides: str) -> tuple[SelfPlayActor, list]:
    """A tic-tac-toe actor whose search is deterministic (no root noise, greedy): without random
    plies every game of the batch plays the same moves. Returns it and the list its finished games reach."""
    cfg = load(SelfPlayConfig, ROOT / "configs/tic_tac_toe.yaml",
               ["search.root_noise=false", "search.temperature_plies=0",
                f"actors.random_opening_plies={random_plies}", f"actors.games_per_actor={GAMES}", *overrides])
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


def test_a_pgns_games_from_set_up_positions_are_left_out_with_a_note(tmp_path, capsys):
    (tmp_path / "games.pgn").write_text(
        '[Event "a"]\n\n1. e4 e5 2. Nf3 Nc6 1-0\n\n'
        '[Event "b"]\n[SetUp "1"]\n[FEN "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"]\n\n1. e4 Kd7 1-0\n\n')
    lines = book_lines(str(tmp_path / "games.pgn"), "chess")
    assert len(lines) == 1 and actions_to_board(lines[0].tolist()).fen() == chess.Board(
        "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3").fen()
    assert "1 of 2 lines start from a set-up position" in capsys.readouterr().err


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


def test_a_random_prefix_of_a_whole_game_starts_each_game_inside_it(local_ray):  # noqa: F811
    """actors.opening_book_prefix=random: a game plays the line's first k moves, k uniform in [0, 4] for
    a 5-move line whose last move wins (a game never starts finished), then the search."""
    line = np.array([0, 3, 1, 4, 2], np.int32)  # X takes the top row on the fifth move
    actor, _ = deterministic_actor(0, (line,), "actors.opening_book_prefix=random")
    actor.play(4)  # no game of tic-tac-toe ends before its fifth move: every log is still the first game's
    prefixes = [len(log.opening) for log in actor.logs]
    assert set(prefixes) == {0, 1, 2, 3, 4}  # 64 games: every length drawn, never the whole line
    searched = np.array(actor.searched)  # [4, GAMES] the search's choices
    for b, log in enumerate(actor.logs):
        k = len(log.opening)
        assert len(log.actions) == 4 and len(log.policy) == 4  # the book's plies searched too
        np.testing.assert_array_equal(log.actions[:k], line[:k])
        np.testing.assert_array_equal(log.actions[k:], searched[k:, b])


def test_an_unknown_book_prefix_is_a_config_error():
    with pytest.raises((ConfigError, ValueError), match="opening_book_prefix"):
        load(SelfPlayConfig, ROOT / "configs/tic_tac_toe.yaml", ["actors.opening_book_prefix=half"])


def test_selfplay_cli_rejects_a_book_for_another_game_before_starting(tmp_path):
    result = subprocess.run(
        [sys.executable, "selfplay.py", "--config", "configs/connect_four.yaml", "--set",
         f"runs_dir={tmp_path}", "actors.opening_book=lichess_chess_openings/c.tsv"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "is for chess" in lines[0] and "Traceback" not in result.stderr
    assert not any(tmp_path.iterdir())  # no run directory left behind
