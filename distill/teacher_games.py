"""Games of a teacher network's raw policy as distillation records: boards a search corpus never reaches.

    python -m distill.teacher_games OUT --teacher networks/chess_distilled_4x64 --boards 150000

A self-play corpus holds the boards of the teacher's own searched games; a student trained on them
follows the search where the corpus goes and reads other positions poorly
(docs/experiments/2026-11-28-students-of-the-distilled-network.md). A forward pass costs far less than
a search, so these games are cheap: `games_at_once` games in step, each opening with a random line of
an opening book, then every move sampled from the teacher's policy at `temperature` (1: its own
distribution, so the games wander into positions the argmax never plays). Each board not seen before
becomes one record in the format of distill/records.py:
    policy  the teacher's softmax over the legal moves (BC's and AV-all's best-move term's soft target
            with `data.bc_soft`)
    values  each move's one-ply value by the teacher, as distill/selfplay_corpus.py labels a search's
            unvisited moves (the rules' value where the move ends the game)
    value   the teacher's value of the board; best: the policy's argmax; outcome: the game's result
Records of a game are written when it ends (its outcome known). Interrupted, the same command
continues: the boards on disk are not repeated and the next games draw from a new seed.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Literal, Sequence

import chess
import numpy as np

from arena import Book, book_files, one_ply_values_many
from distill.records import ShardWriter, build_index, iter_records, resume_job
from distill.selfplay_corpus import NetworkTeacher
from games import chess_bridge

JOB_FILE = "teacher_games.json"  # what the directory was made from: a rerun resumes only the same job


@dataclasses.dataclass(frozen=True)
class TeacherGames:
    """What a directory of teacher games is made from (its JOB_FILE)."""

    teacher: str  # the chess network directory whose policy plays and labels
    book: str = "lichess_chess_openings"  # opening lines (a PGN/TSV file or folder, or a name under openings/)
    temperature: float = 1.0  # moves sampled from softmax(logits / temperature) over the legal moves
    max_plies: int = 160  # a game stops here (its records' outcome 0.5)
    seed: int = 0
    # one_ply: each move's one-ply value (~35 teacher boards per record); none: NaN, a policy-only
    # record (one teacher board: BC and AV-all's best-move term with data.bc_soft, no AV target)
    values: Literal["one_ply", "none"] = "one_ply"


class _Teacher(NetworkTeacher):
    """The teacher network's priors over each board's legal moves, beside its win probabilities."""

    def priors(self, boards: Sequence[chess.Board], moves: Sequence[Sequence[chess.Move]]):
        """(per board the [len(moves)] logits of its moves, [N] win probabilities)."""
        logits, values = self.outputs(boards)
        per_board = []
        for row, board, legal in zip(logits, boards, moves):
            actions = [chess_bridge.move_to_pgx_action(m, board.turn == chess.WHITE) for m in legal]
            per_board.append(row[actions].astype(np.float64))
        return per_board, (values + 1) / 2


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    z = logits / temperature
    z = np.exp(z - z.max())
    return z / z.sum()


def opening_lines(book: str) -> list[tuple[str, ...]]:
    """Every line of `book` from the initial position, as UCI moves."""
    lines = []
    for file in book_files(book):
        openings = Book(file)
        lines.extend(o.moves for o in (openings[i] for i in range(len(openings))) if o.fen == chess.STARTING_FEN)
    if not lines:
        raise ValueError(f"{book}: no lines from the initial position (a PGN or TSV book, e.g. lichess_chess_openings)")
    return lines


class _Game:
    """One game in progress and the records of its new boards (their outcome set when it ends)."""

    def __init__(self, game_id: str, line: Sequence[str]):
        self.id, self.board, self.records = game_id, chess.Board(), []
        for uci in line:
            self.board.push_uci(uci)

    def result(self, max_plies: int) -> float | None:
        """White's result once the game is over (0.5 at the ply cap), else None."""
        outcome = self.board.outcome(claim_draw=True)
        if outcome is not None:
            return 0.5 if outcome.winner is None else float(outcome.winner == chess.WHITE)
        return 0.5 if self.board.ply() >= max_plies else None

    def finished_records(self, white_result: float) -> list[dict]:
        for rec in self.records:
            white = rec["fen"].split()[1] == "w"
            rec["outcome"] = white_result if white else 1.0 - white_result
        return self.records


def board_key(fen: str) -> str:
    """A FEN without its move clocks: the same position reached in another game is one record."""
    return " ".join(fen.split()[:4])


def generate(out_dir: str | Path, job: TeacherGames, boards: int, games_at_once: int = 256,
             teacher: _Teacher | None = None, show_progress: bool = True) -> dict:
    """Plays teacher games until `out_dir` holds `boards` records (resuming what it holds)."""
    out_dir = Path(out_dir)
    seen, done, games_started = _resume(out_dir, job)
    teacher = teacher or _Teacher(job.teacher)
    lines = opening_lines(job.book)
    rng = np.random.default_rng([job.seed, games_started])  # a resumed job plays new games
    written, stale = 0, 0

    def new_game() -> _Game:
        nonlocal games_started
        games_started += 1
        return _Game(f"teacher-{job.seed}-{games_started - 1}", lines[rng.integers(len(lines))])

    games = [new_game() for _ in range(games_at_once)]
    with ShardWriter(out_dir) as writer:
        while done + written < boards:
            for i, game in enumerate(games):
                result = game.result(job.max_plies)
                if result is not None:
                    recs = game.finished_records(result)
                    writer.write_many(recs)
                    written += len(recs)
                    games[i] = new_game()
                    if show_progress:
                        print(f"\r{done + written:,} / {boards:,} boards, {games_started:,} games", end="",
                              file=sys.stderr)
            stale = 0 if _play_one_ply(games, teacher, seen, job.temperature, rng, job.values) else stale + 1
            if stale > 2 * job.max_plies:  # whole games without one new board: the book and policy repeat
                raise ValueError(f"the teacher's games stopped reaching new boards after {done + written:,}: "
                                 f"raise --temperature or use a book with more lines")
    if show_progress:
        print(file=sys.stderr)
    build_index(out_dir)
    return {"records": done + written, "resumed_after": done, "games_started": games_started, "out_dir": str(out_dir)}


def _play_one_ply(games: list[_Game], teacher: _Teacher, seen: set, temperature: float,
                  rng: np.random.Generator, values_of: str = "one_ply") -> int:
    """Every game's next move from the teacher's policy; new boards recorded with their labels.
    Returns how many boards were new."""
    boards = [g.board for g in games]
    moves = [list(b.legal_moves) for b in boards]
    logits, values = teacher.priors(boards, moves)
    fens = [b.fen() for b in boards]
    new = []
    for i, fen in enumerate(fens):  # a board two games reach at once is recorded once
        if board_key(fen) not in seen:
            seen.add(board_key(fen))
            new.append(i)
    if values_of == "none":
        move_values = [np.full(len(moves[i]), np.nan) for i in new]
    else:
        move_values = one_ply_values_many([(boards[i].copy(stack=False), moves[i]) for i in new],
                                          teacher.win_probabilities) if new else []
    for i, mv in zip(new, move_values):
        policy = softmax(logits[i])
        games[i].records.append({
            "fen": fens[i], "game": games[i].id, "ply": boards[i].ply(), "source": "teacher",
            "moves": [m.uci() for m in moves[i]], "values": [float(v) for v in mv],
            "value": float(values[i]), "policy": [float(p) for p in policy],
            "best": moves[i][int(np.argmax(policy))].uci()})
    for game, legal, lg in zip(games, moves, logits):
        game.board.push(legal[rng.choice(len(legal), p=softmax(lg, temperature))])
    return len(new)


def _resume(out_dir: Path, job: TeacherGames) -> tuple[set, int, int]:
    """(board keys on disk, records on disk, games started) of an earlier run of the same job;
    FileExistsError if `out_dir` holds anything else."""
    if not resume_job(out_dir, dataclasses.asdict(job), JOB_FILE, "these teacher games"):
        return set(), 0, 0
    seen, games, count = set(), set(), 0
    for rec in iter_records(out_dir):
        seen.add(board_key(rec["fen"]))
        games.add(rec["game"])
        count += 1
    last = max((int(g.rsplit("-", 1)[1]) for g in games), default=-1)
    return seen, count, last + 1


def main(argv: Sequence[str] | None = None) -> None:
    """python -m distill.teacher_games OUT --teacher NET --boards N."""
    import argparse
    parser = argparse.ArgumentParser(description="Records of a teacher network's raw-policy games (policy, "
                                                 "one-ply values) for students; rerun to resume.")
    parser.add_argument("out", help="a new directory for the records (or an interrupted one's)")
    parser.add_argument("--teacher", required=True, help="a chess self-play network directory")
    parser.add_argument("--boards", type=int, required=True, help="records to hold when done")
    parser.add_argument("--book", default=TeacherGames.book, help="opening lines the games start from")
    parser.add_argument("--temperature", type=float, default=TeacherGames.temperature)
    parser.add_argument("--max-plies", type=int, default=TeacherGames.max_plies)
    parser.add_argument("--games-at-once", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--values", choices=["one_ply", "none"], default="one_ply",
                        help="none: policy-only records (no per-move values), ~35 times cheaper")
    args = parser.parse_args(argv)
    if args.temperature <= 0 or args.boards < 1 or args.games_at_once < 1:
        sys.exit("distill.teacher_games: --temperature must be > 0, --boards and --games-at-once >= 1")
    job = TeacherGames(str(Path(args.teacher).resolve()), args.book, args.temperature, args.max_plies, args.seed,
                       args.values)
    try:
        print(json.dumps(generate(args.out, job, args.boards, args.games_at_once)))
    except (FileNotFoundError, FileExistsError, ValueError) as e:
        sys.exit(f"distill.teacher_games: {e}")


if __name__ == "__main__":
    main()
