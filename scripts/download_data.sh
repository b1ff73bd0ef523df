#!/usr/bin/env bash
# Downloads public evaluation data into $ZEROCHESS_DATA (default: ../shared/data beside the checkout)
# in the layout zerochess reads: puzzles/, openings/, perft/, epd/, games/.
# Sources are public (Lichess CC0 puzzle database, Stockfish's CC0 opening books, engine test suites).
# Usage: bash scripts/download_data.sh [--puzzles N]   (N: how many Lichess puzzles to keep, default 10000)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="${ZEROCHESS_DATA:-$here/../shared/data}"
npuzzles=10000
if [ "${1:-}" = "--puzzles" ]; then npuzzles="$2"; fi
need() { command -v "$1" >/dev/null || { echo "missing tool: $1 (install it first)" >&2; exit 1; }; }
need curl; need zstd; need unzip
mkdir -p "$dest"/{puzzles,openings,perft,epd,games}
echo "downloading into $dest"

# Lichess puzzle database (CC0): PuzzleId,FEN,Moves,Rating,...,Themes,...
curl -fsSL https://database.lichess.org/lichess_db_puzzle.csv.zst | zstd -dc \
  | head -n $((npuzzles + 1)) > "$dest/puzzles/lichess_puzzles_themed.csv"

# Stockfish opening books (CC0).
books=https://github.com/official-stockfish/books/raw/master
for b in 8moves_v3.pgn 2moves_v1.epd UHO_4060_v4.epd; do
  curl -fsSL "$books/$b.zip" -o "/tmp/$b.zip" && unzip -o -q "/tmp/$b.zip" -d "$dest/openings/" && rm "/tmp/$b.zip"
done

# Perft positions and classic test suites (Win At Chess, Bratko-Kopec) from sunfish's test files.
sunfish=https://raw.githubusercontent.com/thomasahle/sunfish/master/tests/files
curl -fsSL "$sunfish/perft.epd" -o "$dest/perft/perftsuite_127.epd"
curl -fsSL "$sunfish/win_at_chess_test.epd" -o "$dest/epd/wac_original_300.epd"
curl -fsSL "$sunfish/bratko_kopec_test.epd" -o "$dest/epd/bratko_kopec_24.epd"

echo "done: $(find "$dest" -type f | wc -l) files in $dest"
echo "PGN games for distillation: download any Lichess monthly dump (database.lichess.org) into $dest/games/"
