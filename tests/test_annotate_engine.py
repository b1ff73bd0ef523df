"""distill.engine's multipv reader against python-chess's own `analyse`, on the same Stockfish."""
import chess
import chess.engine
import pytest

from distill import engine as engine_lib
from games.winprob import score_to_win_prob
from runtime import find_stockfish, open_uci

FENS = [
    chess.STARTING_FEN,
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",  # mate in one among 15 moves
    "8/P7/8/8/8/8/6kp/K7 b - - 0 70",  # promotions
    "rnb1kbnr/pppp1ppp/8/4p3/4P2q/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
]


@pytest.fixture(scope="module")
def engines():
    ours = engine_lib.open_engine()
    theirs = open_uci(find_stockfish())
    theirs.configure({"Threads": 1, "Hash": 16})
    yield ours, theirs
    ours.quit()
    theirs.quit()


def _python_chess_values(engine, board, nodes_per_move):
    moves = list(board.legal_moves)
    infos = engine.analyse(board, chess.engine.Limit(nodes=nodes_per_move * len(moves)),
                           multipv=len(moves), game=object())
    return {info["pv"][0].uci(): score_to_win_prob(info["score"].relative) for info in infos}


@pytest.mark.parametrize("fen", FENS)
def test_move_values_equal_python_chess_analyse(engines, fen):
    ours, theirs = engines
    board = chess.Board(fen)
    values = engine_lib.move_values(ours, board, nodes_per_move=50)
    assert list(values) == [m.uci() for m in board.legal_moves]  # every move, in python-chess's order
    assert values == _python_chess_values(theirs, board, 50)
    assert board.fen() == fen


def test_mate_in_one_is_a_certain_win(engines):
    values = engine_lib.move_values(engines[0], chess.Board(FENS[2]), nodes_per_move=50)
    assert values["a1a8"] == 1.0 and max(v for m, v in values.items() if m != "a1a8") < 1.0


def test_limits_and_a_dead_engine():
    assert engine_lib.board_limit(20, nodes_per_move=100) == "nodes 2000"
    assert engine_lib.board_limit(20, time_per_move=0.01) == "movetime 200"
    with pytest.raises(ValueError, match="nodes_per_move or time_per_move"):
        engine_lib.board_limit(20)
    engine = engine_lib.open_engine()
    engine._proc.kill()
    engine._proc.wait()
    with pytest.raises(chess.engine.EngineTerminatedError):
        engine_lib.move_values(engine, chess.Board(), nodes_per_move=10)
    engine.quit()  # closing a dead engine is quiet
