"""The default chess self-play path, in one actor (a tiny network, few simulations): the games are real
chess (python-chess replays every move), the records hold the observations pgx computes for those
positions, resignation ends a game where it is forced on (the side to move loses, the never-resign
games only note it), and a finished game reaches games.pgn and reads back with python-chess."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import chess
import chess.pgn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from local_actor import local_actor
from replay_records import make_record

import games
from actors.resignation import ThresholdTuner, classify
from actors.sparring import SparringPartner
from configs.loader import load
from games import chess_bridge
from replay.record import encode
from selfplay.config import SelfPlayConfig
from selfplay.sample_games import append_sample_game

ROOT = Path(__file__).resolve().parents[1]
VALUE = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}
RESIGN_AT = 6  # resign_min_plies: with a threshold of 1 every position is hopeless from here
GAMES = 8  # games per actor
# One actor shape for every test here (network, simulations, games per actor): its search compiles once and
# the persistent JAX cache serves the other tests, on either xdist worker.
TINY = ["network.resnet.num_blocks=1", "network.resnet.filters=8", "network.resnet.value_hidden=8",
        "search.num_simulations=4", "search.max_num_considered_actions=4", f"actors.games_per_actor={GAMES}"]


def _material_lead(board: chess.Board, colour: chess.Color) -> int:
    """`colour`'s material minus the other side's, in pawns (python-chess's pieces, VALUE's weights)."""
    return sum(VALUE[p.piece_type] * (1 if p.color == colour else -1) for p in board.piece_map().values())


def test_chess_actor_resigns_records_real_positions_and_writes_pgn(local_ray, tmp_path):
    cfg = load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", [
        *TINY, "actors.resign_threshold=1.0", f"actors.resign_min_plies={RESIGN_AT}",
        "actors.resign_after_version=0", "actors.resign_disabled_fraction=0.5"])
    actor, records = local_actor(cfg, seed=3)
    report = actor.play(RESIGN_AT + 2)
    disabled = [log for log in actor.logs if log.serial <= GAMES and log.resign_disabled]
    assert records and disabled, "seed 3 gives both kinds of game"  # each game never-resign with p=0.5
    assert len(records) + len(disabled) == GAMES  # every game that may resign did, at its first chance

    game = games.make("chess")
    step, observe = jax.jit(game.step), jax.jit(game.observe)
    for record in records:
        assert record.termination == "resign" and record.plies == RESIGN_AT
        white = int(record.to_play[0])  # pgx player ids are per game; white moves first
        np.testing.assert_array_equal(record.rewards[[white, 1 - white]], [-1.0, 1.0])  # white to move at ply 6
        board = chess.Board()
        state = game.init(jnp.asarray(record.init_key)[None])
        for t, action in enumerate(record.actions):
            observed = record.observation(t)
            assert observed.any()  # real planes, not the zeros of a stand-in record
            np.testing.assert_array_equal(np.asarray(observe(state))[0], observed)
            move = chess_bridge.pgx_action_to_move(int(action), board)
            assert move in board.legal_moves, (t, move, board.fen())
            board.push(move)
            state = step(state, jnp.asarray([action]))
        append_sample_game(tmp_path, encode(record))
    for log in disabled:  # the never-resign games noted who would have resigned, and play on
        assert log.would_resign == int(log.to_play[0]) and len(log.actions) == RESIGN_AT + 2
        scores = np.asarray(log.resign_scores)  # one resign score a ply, none allowed before RESIGN_AT
        assert len(scores) == len(log.actions) and np.isinf(scores[:RESIGN_AT]).all()
        assert (np.abs(scores[RESIGN_AT:]) <= 1).all()
    # a finished never-resign game feeds the threshold's tuner, and the actor reports the threshold it uses
    assert report.resign_threshold == 1.0
    b = actor.logs.index(disabled[0])
    before = [np.asarray(disabled[0].resign_scores), np.asarray(disabled[0].to_play)]
    actor.resign = ThresholdTuner(start=1.0, target=0.05, window=10)
    actor._close_game(b, np.array([1.0, -1.0], np.float32), "rules", -1, 0)
    np.testing.assert_array_equal(actor.resign.outcomes[0], classify(*before, np.array([1.0, -1.0])))

    with open(tmp_path / "games.pgn") as f:
        read = [chess.pgn.read_game(f) for _ in records]
    for record, pgn in zip(records, read):
        assert not pgn.errors and pgn.headers["Result"] == "0-1" and pgn.headers["Termination"] == "resign"
        assert pgn.headers["Round"] == record.game_id
        replayed = chess.Board()
        for action, move in zip(record.actions, pgn.mainline_moves(), strict=True):
            assert move == chess_bridge.pgx_action_to_move(int(action), replayed)
            replayed.push(move)


def test_a_long_game_is_adjudicated_by_material(local_ray):
    """actors.adjudicate_plies: at that ply a game ends, won by the side `adjudicate_margin` pawns ahead,
    else drawn; python-chess counts the material of the replayed game."""
    plies = 3
    cfg = load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", [
        *TINY, "actors.resign_enabled=false", f"actors.adjudicate_plies={plies}", "actors.adjudicate_margin=1"])
    white = [True, False, True]
    lines = (chess_bridge.ucis_to_pgx_actions(["e2e4", "d7d5", "e4d5"], white),  # white a pawn up
             chess_bridge.ucis_to_pgx_actions(["e2e4", "e7e5", "g1f3"], white))  # level
    actor, records = local_actor(cfg, seed=5, opening_lines=lines)
    actor.play(plies)
    assert len(records) == GAMES and all(r.termination == "adjudicated" and r.plies == plies for r in records)
    seen = set()
    for record in records:
        lead = _material_lead(chess_bridge.actions_to_board(record.actions), chess.WHITE)
        white_id = int(record.to_play[0])
        expected = 1.0 if lead >= 1 else -1.0 if lead <= -1 else 0.0
        np.testing.assert_array_equal(record.rewards[[white_id, 1 - white_id]], [expected, -expected])
        seen.add(expected)
    assert seen == {0.0, 1.0}  # both lines drawn



def _sparring_actor(seed: int, *overrides: str):
    cfg = load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", [
        *TINY, "actors.sparring_fraction=1.0", "actors.sparring_skill=20", "actors.sparring_depth=2", *overrides])
    return local_actor(cfg, seed=seed)


def test_sparring_games_play_stockfish_on_its_side_and_record_every_position(local_ray):
    """actors.sparring_fraction=1: every game has Stockfish on one side (at Skill Level 20 its move depends on
    the position alone, so a second Stockfish replays it); the network's side plays its search's most
    visited move although the temperature's plies are not over, and both sides' positions are searched and
    recorded."""
    plies = 10
    actor, _ = _sparring_actor(0, "actors.resign_enabled=false", "search.temperature_plies=30")
    searched = []

    def recording(*args):  # keeps the search's move without the temperature's sampling, every ply
        out = search(*args)
        searched.append(np.asarray(out.greedy_action))
        return out
    search, actor.search = actor.search, recording
    actor.play(plies)
    colours = [log.sparring.partner_white for log in actor.logs]
    assert True in colours and False in colours, "seed 0 gives Stockfish both colours"
    referee = SparringPartner(skill=20, depth=2)
    try:
        for b, log in enumerate(actor.logs):
            assert len(log.actions) == plies and len(log.policy) == plies  # every position recorded
            board = chess.Board()
            for t, action in enumerate(log.actions):
                move = chess_bridge.pgx_action_to_move(int(action), board)
                assert move in board.legal_moves
                if board.turn == log.sparring.partner_white:
                    assert move == referee.move(board), (b, t, board.fen())
                else:
                    assert int(action) == searched[t][b]
                assert abs(log.policy[t].sum() - 1.0) < 1e-5  # the network's search target, either side
                board.push(move)
            assert board == log.sparring.board
    finally:
        referee.close()
        actor.partner.close()


def test_sparring_games_never_resign(local_ray):
    """With a threshold of 1 every position is hopeless: each self-play game resigns at its first move, while
    the sparring games (half of them) play on, as in a match."""
    actor, records = _sparring_actor(4, "actors.sparring_fraction=0.5", "actors.resign_threshold=1.0",
                                     "actors.resign_min_plies=0", "actors.resign_after_version=0",
                                     "actors.resign_disabled_fraction=0.0")
    sparring = [log.sparring is not None for log in actor.logs]
    assert 0 < sum(sparring) < len(sparring), "seed 4 gives both kinds of game"
    actor.play(3)
    actor.partner.close()
    first = {int(r.game_id.rsplit("g", 1)[1]) - 1: r for r in records}  # slot b's first game: serial b + 1
    for b, log in enumerate(sparring):
        if log:
            assert b not in first and len(actor.logs[b].actions) == 3 and actor.logs[b].sparring
        else:
            assert first[b].termination == "resign" and first[b].plies == 0


def test_sparring_needs_chess():
    with pytest.raises(ValueError, match="sparring_fraction has Stockfish play chess"):
        load(SelfPlayConfig, ROOT / "configs/tic_tac_toe.yaml", ["actors.sparring_fraction=0.5"])


def test_a_finished_sparring_game_names_its_partner_in_the_record_and_the_pgn(local_ray, tmp_path):
    """A sparring game's record (through the replay's bytes) names Stockfish and the pgx player it played
    (the colour a second Stockfish's moves show); games.pgn names it on that colour; its score for the
    network follows python-chess's material count at the adjudication ply, or the mate that ended it earlier."""
    plies = 6
    actor, records = _sparring_actor(2, "actors.resign_enabled=false", f"actors.adjudicate_plies={plies}",
                                     "actors.adjudicate_margin=1")
    actor.play(plies)
    actor.partner.close()
    assert len(records) == GAMES
    referee = SparringPartner(skill=20, depth=2)
    try:
        for record in records:
            assert record.partner == "Stockfish skill 20 depth 2"
            partner_white = record.partner_player == int(record.to_play[0])
            board = chess.Board()
            for action in record.actions:
                move = chess_bridge.pgx_action_to_move(int(action), board)
                if board.turn == partner_white:
                    assert move == referee.move(board)
                board.push(move)
            if board.is_checkmate():  # mated before the adjudication ply: the rules' result
                assert record.termination == "rules"
                assert record.partner_score() == (1.0 if board.turn == partner_white else 0.0)
            else:
                assert record.termination == "adjudicated" and record.plies == plies
                lead = _material_lead(board, partner_white)  # Stockfish's
                assert record.partner_score() == (0.0 if lead >= 1 else 1.0 if lead <= -1 else 0.5)
            append_sample_game(tmp_path, encode(record))
    finally:
        referee.close()
    with open(tmp_path / "games.pgn") as f:
        read = [chess.pgn.read_game(f) for _ in records]
    for record, pgn in zip(records, read):
        partner_white = record.partner_player == int(record.to_play[0])
        partner, network = ("White", "Black") if partner_white else ("Black", "White")
        assert pgn.headers[partner] == "Stockfish skill 20 depth 2" and pgn.headers[network] == "zerochess v0"


def test_the_partner_score_reads_the_partners_player_id():
    """pgx player ids are per game: the score is the other player's reward, whatever colour it had."""
    record = make_record("spar", 3)  # player 0 won
    assert replace(record, partner="Stockfish", partner_player=1).partner_score() == 1.0
    assert replace(record, partner="Stockfish", partner_player=0).partner_score() == 0.0
    drawn = replace(record, rewards=np.zeros(2, np.float32), partner="Stockfish", partner_player=0)
    assert drawn.partner_score() == 0.5
    with pytest.raises(ValueError, match="self-play, no partner"):
        record.partner_score()
