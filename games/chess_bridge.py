"""Bridge between pgx chess and python-chess: states <-> FEN/boards, actions <-> UCI/`chess.Move`.

pgx facts this module encodes (pgx 2.6):
  * action = from_square * 73 + plane, squares counted file-major (a1=0, a2=1, ..., h8=63);
    planes 0-8 under-promotions (plane // 3: rook, bishop, knight; plane % 3: straight, toward
    the h-file, toward the a-file), 9-64 queen-style moves, 65-72 knight moves. A queen promotion
    is the plain queen-style move of the pawn.
  * the board is seen from the side to move: for black every rank r becomes 7 - r, so the same
    action id means different absolute moves for white and black.
  * `from_fen` starts with an empty position history: repetition (and pgx's observation history)
    needs the game's moves replayed, which `board_to_state` does.

Tables are numpy, indexed by colour first (0 = white to move, 1 = black to move, as pgx's
`pgx_internals.rule_state(state).color`), so batches convert with one fancy index.
"""
from __future__ import annotations

import functools
from typing import Iterable, Sequence

import chess
import chess.pgn
import jax
import jax.numpy as jnp
import numpy as np
import pgx

from games import pgx_internals

NUM_PGX_ACTIONS = 4672  # 64 from-squares x 73 planes
NUM_PLANES = 73
WHITE, BLACK = 0, 1  # colour index of the tables (the rule state's `color`)
_UNDERPROMOTION_PIECES = (chess.ROOK, chess.BISHOP, chess.KNIGHT)  # pgx plane // 3

# Positions pgx cannot represent or python-chess calls nonsense: rejected by `fen_to_state`.
_FATAL_STATUS = {
    chess.STATUS_EMPTY: "empty board",
    chess.STATUS_NO_WHITE_KING: "no white king",
    chess.STATUS_NO_BLACK_KING: "no black king",
    chess.STATUS_TOO_MANY_KINGS: "too many kings",
    chess.STATUS_TOO_MANY_WHITE_PIECES: "more than 16 white pieces",
    chess.STATUS_TOO_MANY_BLACK_PIECES: "more than 16 black pieces",
    chess.STATUS_PAWNS_ON_BACKRANK: "pawns on the first or last rank",
    chess.STATUS_OPPOSITE_CHECK: "the side not to move is in check",
    chess.STATUS_INVALID_EP_SQUARE: "invalid en-passant square",
}


# --------------------------------------------------------------------------------------------
# Squares
# --------------------------------------------------------------------------------------------
def pgx_square_to_chess(square: int, white_to_move: bool) -> int:
    """pgx square (file-major, side-to-move frame) -> python-chess square (rank-major, absolute)."""
    file, rank = divmod(int(square), 8)
    return chess.square(file, rank if white_to_move else 7 - rank)


def chess_square_to_pgx(square: int, white_to_move: bool) -> int:
    """python-chess square -> pgx square in the frame of the side to move."""
    file, rank = chess.square_file(square), chess.square_rank(square)
    return file * 8 + (rank if white_to_move else 7 - rank)


# --------------------------------------------------------------------------------------------
# Action tables
# --------------------------------------------------------------------------------------------
def _build_tables():
    from_plane = np.asarray(pgx_internals.from_plane())  # [64, 73] pgx to-square or -1
    from_sq = np.full((2, NUM_PGX_ACTIONS), -1, np.int32)
    to_sq = np.full((2, NUM_PGX_ACTIONS), -1, np.int32)
    promo = np.zeros((2, NUM_PGX_ACTIONS), np.int32)  # under-promotion piece type, 0 if none
    uci = np.full((2, NUM_PGX_ACTIONS), "", dtype="<U5")
    # [colour, from, to, promotion piece type (0 = none or queen)] -> pgx action, -1 if none.
    move_to_action = np.full((2, 64, 64, 7), -1, np.int32)
    for colour in (WHITE, BLACK):
        white = colour == WHITE
        for action in range(NUM_PGX_ACTIONS):
            src, plane = divmod(action, NUM_PLANES)
            dst = from_plane[src, plane]
            if dst < 0:
                continue
            f, t = pgx_square_to_chess(src, white), pgx_square_to_chess(dst, white)
            p = _UNDERPROMOTION_PIECES[plane // 3] if plane < 9 else 0
            from_sq[colour, action], to_sq[colour, action], promo[colour, action] = f, t, p
            uci[colour, action] = chess.Move(f, t, p or None).uci()
            move_to_action[colour, f, t, p] = action
            pawn_to_last_rank = src % 8 == 6 and dst % 8 == 7 and abs(src // 8 - dst // 8) <= 1
            if p == 0 and pawn_to_last_rank:  # a queen promotion is the plain pawn move
                move_to_action[colour, f, t, chess.QUEEN] = action
    return from_sq, to_sq, promo, uci, move_to_action


# PGX_FROM_SQUARE/PGX_TO_SQUARE [2, 4672]: python-chess squares of each action (-1: never legal).
# PGX_PROMOTION [2, 4672]: python-chess piece type of an under-promotion, else 0.
# PGX_UCI [2, 4672]: UCI string of each action ('' if never legal); queen promotions carry no
#   'q' here because without a board a pawn's e7e8 and a rook's e7e8 are the same action.
# MOVE_TO_PGX [2, 64, 64, 7]: [colour, from, to, promotion type or 0] -> pgx action or -1.
PGX_FROM_SQUARE, PGX_TO_SQUARE, PGX_PROMOTION, PGX_UCI, MOVE_TO_PGX = _build_tables()
for _table in (PGX_FROM_SQUARE, PGX_TO_SQUARE, PGX_PROMOTION, PGX_UCI, MOVE_TO_PGX):
    _table.setflags(write=False)


def _colour(white_to_move) -> np.ndarray:
    return np.where(np.asarray(white_to_move, bool), WHITE, BLACK)


def move_to_pgx_action(move: chess.Move, white_to_move: bool) -> int:
    """`chess.Move` -> pgx action id for the given side to move; ValueError if pgx has none."""
    action = MOVE_TO_PGX[_colour(white_to_move), move.from_square, move.to_square, move.promotion or 0]
    if action < 0 or move.drop:
        side = "white" if white_to_move else "black"
        raise ValueError(f"move {move.uci()} has no pgx action for {side} to move")
    return int(action)


def uci_to_pgx_action(uci: str, white_to_move: bool) -> int:
    """UCI string (absolute squares, e.g. 'e7e8q') -> pgx action id; ValueError if impossible."""
    try:
        move = chess.Move.from_uci(uci)
    except (ValueError, chess.InvalidMoveError) as err:
        raise ValueError(f"bad UCI move {uci!r}: {err}") from None
    return move_to_pgx_action(move, white_to_move)


def pgx_action_to_uci(action: int, white_to_move: bool) -> str:
    """pgx action id -> UCI string without a board (queen promotions have no 'q' suffix;
    use `pgx_action_to_move` with a board to get it). ValueError if the action is never legal."""
    action = int(action)
    if not 0 <= action < NUM_PGX_ACTIONS or not PGX_UCI[_colour(white_to_move), action]:
        raise ValueError(f"pgx action {action} is not a move on the board")
    return str(PGX_UCI[_colour(white_to_move), action])


def pgx_action_to_move(action: int, board: chess.Board) -> chess.Move:
    """pgx action id -> `chess.Move` in `board` (side to move from the board; adds the queen
    promotion when a pawn reaches the last rank). Does not check legality."""
    colour = WHITE if board.turn == chess.WHITE else BLACK
    action = int(action)
    if not 0 <= action < NUM_PGX_ACTIONS or PGX_FROM_SQUARE[colour, action] < 0:
        raise ValueError(f"pgx action {action} is not a move on the board")
    src, dst = int(PGX_FROM_SQUARE[colour, action]), int(PGX_TO_SQUARE[colour, action])
    promotion = int(PGX_PROMOTION[colour, action]) or None
    if promotion is None and board.piece_type_at(src) == chess.PAWN and chess.square_rank(dst) in (0, 7):
        promotion = chess.QUEEN
    return chess.Move(src, dst, promotion)


def pgx_actions_to_uci(actions, white_to_move) -> np.ndarray:
    """Vectorised `pgx_action_to_uci`: actions [...] and white_to_move [...] (broadcast) -> str
    array [...] ('' for actions that are never legal; no 'q' on queen promotions)."""
    return PGX_UCI[_colour(white_to_move), np.asarray(actions)]


def ucis_to_pgx_actions(ucis: Iterable[str], white_to_move) -> np.ndarray:
    """Vectorised `uci_to_pgx_action` -> int32 [N]; white_to_move is a bool or [N] bools."""
    ucis = list(ucis)
    white = np.broadcast_to(np.asarray(white_to_move, bool), (len(ucis),))
    return np.array([uci_to_pgx_action(u, w) for u, w in zip(ucis, white)], np.int32).reshape(len(ucis))


def legal_moves_of_mask(mask, board: chess.Board) -> list[chess.Move]:
    """pgx legal mask [4672] of the position `board` -> the `chess.Move`s it allows (for a
    non-terminal state: pgx sets every action legal once a game is over)."""
    return [pgx_action_to_move(a, board) for a in np.flatnonzero(np.asarray(mask))]


# --------------------------------------------------------------------------------------------
# States
# --------------------------------------------------------------------------------------------
def parse_fen(fen: str) -> chess.Board:
    """FEN -> `chess.Board`; ValueError naming the FEN if it is malformed or not a position pgx
    can play (missing kings, side not to move in check, more than 16 pieces a side, ...)."""
    if not isinstance(fen, str):
        raise ValueError(f"FEN must be a string, got {type(fen).__name__}")
    try:
        board = chess.Board(fen)
    except ValueError as err:
        raise ValueError(f"bad FEN {fen!r}: {err}") from None
    problems = [text for flag, text in _FATAL_STATUS.items() if board.status() & flag]
    if problems:
        raise ValueError(f"bad FEN {fen!r}: {', '.join(problems)}")
    return board


def fen_to_state(fen: str, white_player: int = 0):
    """FEN -> one (unbatched) pgx chess State whose player `white_player` plays white.

    The state has no history before this position (pgx semantics): for repetition to count
    earlier positions, build it with `board_to_state` from a board with its move stack.
    (Unlike `pgx.experimental.chess.from_fen`, the history holds no phantom initial position,
    a terminal position gets pgx's all-true mask as after `step`, and it compiles once.)
    """
    return _assemble_state(*_state_arrays(fen, white_player))


FENS_CHUNK = 512  # FENs per batched call of `fens_to_states` (one compiled shape)


def fens_to_states(fens: Sequence[str], white_player: int = 0):
    """FENs -> one batched pgx chess State [N] (host numpy leaves) equal to stacking `fen_to_state`
    of each, built in chunks of FENS_CHUNK: one device call per chunk, not per FEN."""
    if not len(fens):
        raise ValueError("fens_to_states needs at least one FEN")
    chunks = []
    for start in range(0, len(fens), FENS_CHUNK):
        part = [_state_arrays(fen, white_player) for fen in fens[start:start + FENS_CHUNK]]
        arrays = [np.stack(column) for column in zip(*part)]
        pad = FENS_CHUNK - len(part)
        arrays = [np.concatenate([a, np.repeat(a[-1:], pad, axis=0)]) for a in arrays]
        states = jax.device_get(_assemble_states(*arrays))  # host arrays: slicing them compiles nothing
        chunks.append(jax.tree.map(lambda x, n=len(part): x[:n], states))
    return chunks[0] if len(chunks) == 1 else jax.tree.map(lambda *xs: np.concatenate(xs), *chunks)


def _state_arrays(fen: str, white_player: int) -> tuple:
    """The arguments of `_assemble_state` for a FEN (ValueError naming a bad FEN)."""
    board = parse_fen(fen)
    white = board.turn == chess.WHITE
    pieces = np.zeros(64, np.int32)
    for square, piece in board.piece_map().items():
        sign = 1 if piece.color == board.turn else -1
        pieces[chess_square_to_pgx(square, white)] = sign * piece.piece_type
    rights = board.clean_castling_rights()
    castling = np.array([[bool(rights & chess.BB_A1), bool(rights & chess.BB_H1)],
                         [bool(rights & chess.BB_A8), bool(rights & chess.BB_H8)]])
    if not white:
        castling = castling[::-1]
    # pgx keeps the en-passant square after every double push (python-chess: board.ep_square).
    ep = -1 if board.ep_square is None else chess_square_to_pgx(board.ep_square, white)
    if white_player not in (0, 1):
        raise ValueError(f"white_player must be 0 or 1, got {white_player}")
    return (pieces, np.int32(0 if white else 1), castling, np.int32(ep),
            np.int32(board.halfmove_clock), np.int32(board.fullmove_number), np.int32(white_player))


@jax.jit
def _assemble_state(pieces, color, castling, ep, halfmove, fullmove, white_player):
    empty = pgx_internals.empty_game_state()
    x = pgx_internals.game_state(
        color=color, board=pieces, castling_rights=castling, en_passant=ep,
        halfmove_count=halfmove, fullmove_count=fullmove,
        hash_history=jnp.zeros_like(empty.hash_history),
        board_history=jnp.zeros_like(empty.board_history))
    x = x._replace(legal_action_mask=pgx_internals.legal_action_mask(x))
    x = pgx_internals.update_history(x)
    order = jnp.where(white_player == 0, jnp.int32([0, 1]), jnp.int32([1, 0]))
    return pgx_internals.chess_state(x, order)


_assemble_states = jax.jit(jax.vmap(_assemble_state.__wrapped__))


def state_at(states, index: int):
    """The index-th state of a batched pgx State."""
    return jax.tree.map(lambda x: x[index], states)


def state_to_board(state) -> chess.Board:
    """One (unbatched) pgx chess State -> `chess.Board` of its position (no move stack)."""
    x = jax.device_get(pgx_internals.rule_state(state))
    if np.ndim(x.color) != 0:
        raise ValueError("expected one state; use state_at(states, i) on a batch")
    white = int(x.color) == WHITE
    turn = chess.WHITE if white else chess.BLACK
    board = chess.Board.empty()
    for pgx_square in np.flatnonzero(x.board):
        value = int(x.board[pgx_square])
        colour = turn if value > 0 else not turn
        board.set_piece_at(pgx_square_to_chess(pgx_square, white), chess.Piece(abs(value), colour))
    board.turn = turn
    mine, theirs = (x.castling_rights[0], x.castling_rights[1])
    white_rights, black_rights = (mine, theirs) if white else (theirs, mine)
    board.castling_rights = ((chess.BB_A1 if white_rights[0] else 0) | (chess.BB_H1 if white_rights[1] else 0)
                             | (chess.BB_A8 if black_rights[0] else 0) | (chess.BB_H8 if black_rights[1] else 0))
    board.ep_square = None if int(x.en_passant) < 0 else pgx_square_to_chess(int(x.en_passant), white)
    board.halfmove_clock = int(x.halfmove_count)
    board.fullmove_number = int(x.fullmove_count)
    return board


def state_to_fen(state, en_passant: str = "legal") -> str:
    """One (unbatched) pgx chess State -> FEN as python-chess writes it (`en_passant` as in
    `chess.Board.fen`: 'legal' shows the square only if a capture is possible, 'fen' always)."""
    return state_to_board(state).fen(en_passant=en_passant)


@functools.lru_cache(maxsize=1)
def _jitted_step():
    return jax.jit(pgx.make("chess").step)


def board_to_state(board: chess.Board, white_player: int = 0):
    """`chess.Board` with its move stack -> one pgx State, by replaying the moves from the
    board's root so that pgx's repetition and board histories are right.

    ValueError if a move is illegal for pgx or pgx ends the game before the last move (pgx
    ends games at threefold repetition and the 50-move rule automatically).
    """
    root = board.root()
    state = fen_to_state(root.fen(en_passant="fen"), white_player)
    step = _jitted_step()
    replay = root.copy(stack=False)
    for ply, move in enumerate(board.move_stack):
        if bool(state.terminated):
            raise ValueError(f"pgx ended the game before ply {ply} ({move.uci()}) at {replay.fen()}")
        action = move_to_pgx_action(move, replay.turn == chess.WHITE)
        if not bool(state.legal_action_mask[action]):
            raise ValueError(f"ply {ply}: move {move.uci()} is illegal for pgx at {replay.fen()}")
        state = step(state, jnp.int32(action))
        replay.push(move)
    return state


# --------------------------------------------------------------------------------------------
# Games
# --------------------------------------------------------------------------------------------
def actions_to_board(actions: Sequence[int], fen: str | None = None) -> chess.Board:
    """Replays pgx actions from the initial position (or `fen`) -> `chess.Board` with the moves
    on its stack. ValueError naming the ply if an action is illegal there."""
    board = parse_fen(fen) if fen is not None else chess.Board()
    for ply, action in enumerate(np.asarray(actions, np.int64).reshape(-1)):
        move = pgx_action_to_move(action, board)
        if not board.is_legal(move):
            raise ValueError(f"ply {ply}: pgx action {int(action)} ({move.uci()}) is illegal at {board.fen()}")
        board.push(move)
    return board


def actions_to_pgn(actions: Sequence[int], fen: str | None = None, headers: dict | None = None,
                   result: str | None = None) -> chess.pgn.Game:
    """Replays pgx actions into a `chess.pgn.Game` (from `fen` if given). The Result header is
    `result` if given, else the python-chess outcome (draws claimable count, as pgx ends those
    games itself), else '*'."""
    board = actions_to_board(actions, fen)
    game = chess.pgn.Game.from_board(board)
    for key, value in (headers or {}).items():
        game.headers[key] = str(value)
    if result is None:
        outcome = board.outcome(claim_draw=True)
        result = outcome.result() if outcome else "*"
    game.headers["Result"] = result
    return game
