"""One game between two agents from an opening, with adjudication, recorded as PGN (`append_pgn`
writes every PGN file of the project).

Adjudication: the game is a draw at `max_plies` plies (AlphaZero's 512-ply cap, book plies
included); optional resign (both engines agree on a score of at least `resign_cp` for
`resign_moves` consecutive moves each) and draw rules (after `draw_move_number`, both report
|score| <= `draw_cp` for `draw_moves` consecutive moves each) like cutechess-cli. Agents without
scores (random) are never adjudicated except by the cap.
"""
from __future__ import annotations

import dataclasses
import datetime
import os
import time

import chess
import chess.pgn

from arena.agents.agent import Agent, Limit
from arena.play.openings import Opening


@dataclasses.dataclass(frozen=True)
class Adjudication:
    """When a game ends before checkmate or a rules draw."""

    max_plies: int = 512  # total plies (book included) after which the game is a draw
    resign_cp: int | None = None  # e.g. 1000: resign when this far behind (None: off)
    resign_moves: int = 3  # ... for this many consecutive moves of each side
    draw_cp: int | None = None  # e.g. 10: adjudicate a draw when both scores are this close
    draw_moves: int = 8  # ... for this many consecutive moves of each side
    draw_move_number: int = 40  # ... but not before this full-move number

    def __post_init__(self):
        for name in ("max_plies", "resign_moves", "draw_moves", "draw_move_number"):
            if getattr(self, name) < 1:  # max_plies 0 would draw every game before a move is made
                raise ValueError(f"rules.{name} must be >= 1, got {getattr(self, name)}")
        if self.resign_cp is not None and self.resign_cp <= 0:
            raise ValueError(f"rules.resign_cp must be > 0 centipawns behind (or unset), got {self.resign_cp}")
        if self.draw_cp is not None and self.draw_cp < 0:
            raise ValueError(f"rules.draw_cp must be >= 0 (or unset), got {self.draw_cp}")


@dataclasses.dataclass(frozen=True)
class PlayedGame:
    """What a match keeps of one game."""

    white: str
    black: str
    result: str  # "1-0", "0-1", "1/2-1/2"
    termination: str  # checkmate, stalemate, ..., max plies, adjudication: resign/draw, error
    plies: int  # plies played by the agents (book plies excluded)
    opening: str
    pgn: str
    seconds: float  # wall time of the game
    white_time: float  # thinking time of each side
    black_time: float

    @property
    def white_score(self) -> float:
        return {"1-0": 1.0, "0-1": 0.0}.get(self.result, 0.5)


_OUTCOME_NAMES = {
    chess.Termination.CHECKMATE: "checkmate", chess.Termination.STALEMATE: "stalemate",
    chess.Termination.INSUFFICIENT_MATERIAL: "insufficient material",
    chess.Termination.SEVENTYFIVE_MOVES: "75-move rule",
    chess.Termination.FIVEFOLD_REPETITION: "fivefold repetition",
    chess.Termination.FIFTY_MOVES: "50-move rule",
    chess.Termination.THREEFOLD_REPETITION: "threefold repetition",
}


def _fingerprint(board: chess.Board) -> tuple:
    """Cheap identity of a position with its history length (to catch agents moving on it)."""
    return (len(board.move_stack), board.turn, board.pawns, board.knights, board.bishops,
            board.rooks, board.queens, board.kings, board.occupied_co[chess.WHITE])


def _rules_ending(board: chess.Board) -> tuple[str, str] | None:
    """(result, termination) when the rules end the game. Draws are claimed as soon as the
    position occurs the third time or the 50-move counter reaches 100 plies, as pgx (and so
    self-play) ends them; python-chess's claim_draw also looks one move ahead and is far slower."""
    outcome = board.outcome(claim_draw=False)
    if outcome is not None:
        return outcome.result(), _OUTCOME_NAMES.get(outcome.termination, "rules")
    if board.halfmove_clock >= 100:
        return "1/2-1/2", "50-move rule"
    if board.is_repetition(3):
        return "1/2-1/2", "threefold repetition"
    return None


def _comment(info: dict, seconds: float) -> str:
    """cutechess-style move comment: the mover's score in pawns, depth, and the time taken."""
    if "mate" in info:
        score = f"{'+' if info['mate'] > 0 else '-'}M{abs(info['mate'])}"
    elif "score_cp" in info:
        score = f"{info['score_cp'] / 100:+.2f}"
    else:
        return f"{seconds:.3f}s"
    depth = f"/{info['depth']}" if "depth" in info else ""
    return f"{score}{depth} {seconds:.3f}s"


class _Adjudicator:
    """Tracks the per-move scores (mover's view) for the resign and draw rules."""

    def __init__(self, rules: Adjudication):
        self.rules = rules
        self.scores: list[int | None] = []

    def verdict(self, board: chess.Board, info: dict) -> tuple[str, str] | None:
        """After a move by the side that just moved: (result, reason) or None."""
        self.scores.append(info.get("score_cp"))
        r = self.rules
        if r.resign_cp is not None:
            recent = self.scores[-2 * r.resign_moves:]
            if len(recent) == 2 * r.resign_moves and None not in recent:
                # Scores alternate between the sides: the last mover's (at even offsets from the
                # end) must all be >= resign_cp and the opponent's <= -resign_cp, or vice versa.
                mover, other = recent[-1::-2], recent[-2::-2]
                mover_colour = not board.turn
                if all(s >= r.resign_cp for s in mover) and all(s <= -r.resign_cp for s in other):
                    return ("1-0" if mover_colour == chess.WHITE else "0-1"), "adjudication: resign"
                if all(s <= -r.resign_cp for s in mover) and all(s >= r.resign_cp for s in other):
                    return ("0-1" if mover_colour == chess.WHITE else "1-0"), "adjudication: resign"
        if r.draw_cp is not None and board.fullmove_number >= r.draw_move_number:
            recent = self.scores[-2 * r.draw_moves:]
            if (len(recent) == 2 * r.draw_moves and None not in recent
                    and all(abs(s) <= r.draw_cp for s in recent)):
                return "1/2-1/2", "adjudication: draw"
        return None


def play_game(white: Agent, black: Agent, opening: Opening, rules: Adjudication = Adjudication(),
              limit: Limit | None = None, event: str = "zerochess match", round_: str = "?",
              white_name: str | None = None, black_name: str | None = None,
              game: int | None = None) -> PlayedGame:
    """Plays one game; an agent error or illegal move loses the game (termination says why).
    `game` (its number in the match) seeds the agents' random streams for this game (Agent.reset)."""
    start = time.perf_counter()
    board = opening.board()
    book_plies = len(board.move_stack)
    for agent in (white, black):
        agent.reset(game)
    adjudicator = _Adjudicator(rules)
    thinking = {chess.WHITE: 0.0, chess.BLACK: 0.0}
    comments: list[str] = []
    moves_played: list[chess.Move] = []
    result, termination = None, None
    while result is None:
        ended = _rules_ending(board)
        if ended is not None:
            result, termination = ended
            break
        if len(board.move_stack) >= rules.max_plies:
            result, termination = "1/2-1/2", "max plies"
            break
        agent = white if board.turn == chess.WHITE else black
        t0 = time.perf_counter()
        position = _fingerprint(board)
        try:
            # The board itself, not a copy (copying the move stack every ply is quadratic);
            # the Agent contract is to leave it as it was.
            move, info = agent.select(board, limit)
            if _fingerprint(board) != position:
                board = opening.board()  # rebuild the true position for the record
                for played in moves_played:
                    board.push(played)
                raise RuntimeError("the agent changed the board it was given")
        except Exception as e:  # an agent crash loses the game instead of killing the match
            result = "0-1" if board.turn == chess.WHITE else "1-0"
            termination = f"error: {agent.name}: {type(e).__name__}: {e}"[:200]
            break
        seconds = time.perf_counter() - t0
        thinking[board.turn] += seconds
        if move not in board.legal_moves:
            result = "0-1" if board.turn == chess.WHITE else "1-0"
            termination = f"illegal move {move} by {agent.name}"
            break
        board.push(move)
        moves_played.append(move)
        comments.append(_comment(info, seconds))
        verdict = adjudicator.verdict(board, info)
        if verdict is not None:
            result, termination = verdict

    game = chess.pgn.Game.from_board(board)
    node = game
    for i, move in enumerate(board.move_stack):
        node = node.variations[0]
        if i >= book_plies:
            node.comment = comments[i - book_plies]
        elif i == book_plies - 1:
            node.comment = "book"
    names = (white_name or white.name, black_name or black.name)
    game.headers.update({
        "Event": event, "Site": "zerochess", "Round": round_,
        "Date": datetime.date.today().strftime("%Y.%m.%d"),
        "White": names[0], "Black": names[1], "Result": result,
        "Termination": termination, "PlyCount": str(len(board.move_stack)),
        "Opening": opening.name, "TimeControl": "-",
    })
    game.headers["Result"] = result
    exporter = chess.pgn.StringExporter(headers=True, variations=False, comments=True)
    return PlayedGame(names[0], names[1], result, termination, len(board.move_stack) - book_plies,
                      opening.name, game.accept(exporter), time.perf_counter() - start,
                      thinking[chess.WHITE], thinking[chess.BLACK])


def append_pgn(path: str | os.PathLike, game: chess.pgn.Game | str) -> None:
    """Appends one game (a `chess.pgn.Game` or its PGN text) to the PGN file at `path` (created if
    missing) with the blank line that separates games: the one writer of every PGN file (matches,
    the in-run evaluator's gauntlet.pgn, a run's games.pgn). Opened per game, so a stopped match or
    run leaves whole games only."""
    with open(path, "a") as f:
        f.write(f"{game}\n\n")
