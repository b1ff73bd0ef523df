"""Searchless students (Ruoss et al. 2024): Stockfish/self-play annotation -> records -> AV/SV/BC
training -> searchless players -> evaluation. See docs/distill.md."""
