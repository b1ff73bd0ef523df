"""Stockfish as the other side of some self-play games (chess): the network then also meets the
positions a different, stronger-in-tactics opponent reaches, not only those its own search walks into.

    partner = SparringPartner(skill=0, depth=1)
    move = partner.move(board)   # board: chess.Board with the game's move stack; a chess.Move
    partner.close()

    game = SparringGame(partner_white=True, free_plies=8)   # one per sparring game, in the actor's log
    action = game.take(action, greedy, partner)   # Stockfish's pgx action, the network's greedy one, or
                                                  # the opening's `action`; the board plays it

Each move is asked as a fresh game (`ucinewgame` clears the engine's hash), so at Skill Level 20 the
move depends on the position alone and a test can replay it; below 20 Stockfish picks among its
lines at random, as its weaker levels do in a match.
"""
from __future__ import annotations

import dataclasses

import chess
import chess.engine

from games import chess_bridge
from runtime import find_stockfish, open_uci


class SparringPartner:
    """One Stockfish process at a fixed Skill Level and depth a move (one thread, 16 MB hash)."""

    def __init__(self, skill: int, depth: int, path: str | None = None):
        self.engine = open_uci([find_stockfish(path)])
        self.engine.configure({"Skill Level": skill, "Threads": 1, "Hash": 16})
        self.limit = chess.engine.Limit(depth=depth)
        self.name = f"Stockfish skill {skill} depth {depth}"  # as game records and PGN name it

    def move(self, board: chess.Board) -> chess.Move:
        """Stockfish's move in `board` (a position with a legal move)."""
        return self.engine.play(board, self.limit, game=object()).move

    def close(self) -> None:
        self.engine.quit()


@dataclasses.dataclass
class SparringGame:
    """One sparring game as the actor tracks it: Stockfish's colour and the game as a python-chess board
    (Stockfish is given its move stack)."""

    partner_white: bool  # Stockfish plays white (else black)
    free_plies: int  # the game's opening plies (book line, random plies): the opening plays them, not Stockfish
    board: chess.Board = dataclasses.field(default_factory=chess.Board)

    def take(self, action: int, greedy: int, partner: SparringPartner) -> int:
        """This ply's pgx action, which the board then plays: inside the opening `action` (its book or random
        move); past it Stockfish's move on its side, the search's `greedy` move on the network's."""
        past_opening = self.board.ply() >= self.free_plies
        if past_opening and self.board.turn == self.partner_white:
            move = partner.move(self.board)
            action = chess_bridge.move_to_pgx_action(move, self.board.turn)
        else:
            action = greedy if past_opening else action
            move = chess_bridge.pgx_action_to_move(action, self.board)
        self.board.push(move)
        return int(action)

    def partner_player(self, white: int) -> int:
        """The pgx player id Stockfish plays, given white's (the first recorded position's player: every
        game starts from the initial position)."""
        return white if self.partner_white else 1 - white
