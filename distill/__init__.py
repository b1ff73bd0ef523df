"""Searchless students (Ruoss et al. 2024): Stockfish/self-play annotation -> records -> AV/SV/BC
training -> student network directories, played as arena's av:/sv:/bc: agents and evaluated
(action accuracy, Kendall's tau, puzzles) like any arena agent. See docs/distill.md."""
