"""Evaluation suites for any agent spec: Lichess puzzles (whole line, any mate counts; overall,
per rating band, per theme), EPD bm/am suites (WAC, ECM, BK, Arasan, BT2630, ...), STS points
(per theme) and action accuracy / Kendall's tau on annotated boards. See runner.py for names."""
from arena.suites.actions import ActionRecord, action_metrics, agent_action_metrics, board_metrics, read_records
from arena.suites.common import fresh_move
from arena.suites.epd import EpdPosition, parse_points, read_epd, solve_epd
from arena.suites.puzzles import BAND_WIDTH, Puzzle, rating_band, read_puzzles, solve_puzzle
from arena.suites.report import Group, ItemResult, SuiteReport, group, group_by, render_table
from arena.suites.runner import (
                                  SUITES,
                                  Suite,
                                  build_report,
                                  evaluate_agent,
                                  evaluate_item,
                                  load_suite,
                                  resolve_suite,
                                  run_suite,
)

__all__ = [
    "ActionRecord", "BAND_WIDTH", "EpdPosition", "Group", "ItemResult", "Puzzle", "SUITES",
    "Suite", "SuiteReport", "action_metrics", "agent_action_metrics", "board_metrics",
    "build_report", "evaluate_agent", "evaluate_item", "fresh_move", "group", "group_by", "load_suite",
    "parse_points", "rating_band", "read_epd", "read_puzzles", "read_records", "render_table",
    "resolve_suite", "run_suite", "solve_epd", "solve_puzzle",
]
