#!/usr/bin/env bash
# The one-GPU measurements (docs/selfplay.md#one-gpu, docs/experiments/2026-11-27-one-gpu-h200.md) as one command on an offline GPU host, run
# from the checkout with these beside it (ignored by git; the first two made by scripts/gpu_bundle.sh):
#   .gpu_wheels/   the bundle (Ray, pgx, mctx, python-chess, tensorboardX, Stockfish), installed on first use
#   .gpu_data/     openings/8moves_v3.pgn.xz and puzzles/lichess_puzzles_themed.csv.xz (the evaluator's),
#                  openings/lichess_chess_openings/*.tsv.xz (the warm run's opening lines)
#   .baseline/     the code before the change (git archive <commit>), for the same-call baseline (absent:
#                  the checkout itself is the baseline, its ply loop benched after the run)
# On the machine with network: bash scripts/gpu_bundle.sh   (prints the size; fails past the 64 MiB a call carries)
# then carry the checkout with .gpu_wheels/ and .gpu_data/ (and .baseline/) to the host and run it there:
# Usage: OUT=<dir> bash scripts/gpu_session.sh preset [MINUTES]   # the preset's run, then the baseline bench in
#                                                                    the time left (MINUTES may be fractional)
#        OUT=<dir> bash scripts/gpu_session.sh compare             # chess_cpu's network in the real run, old and new
#        OUT=<dir> bash scripts/gpu_session.sh sweep               # one actor's ply loop at several batch sizes (no Ray)
#        OUT=<dir> bash scripts/gpu_session.sh warm [MINUTES]      # configs/chess_warm_gpu.yaml: self-play from the
#                                                                    shipped network; its end comes back to be matched
# Everything it measures lands in $OUT (JSON, logs, the run's network and evaluation as a tarball).
# A CPU smoke test of the script itself: GAMES=8 PRESET_SET="actors.games_per_actor=4 ..." (smaller sizes).
# CALL_S (default 590): the seconds the whole call may take (a device call's limit is 600); the run is stopped
# (SIGTERM: it saves its network) in time for the rest, and the baseline bench gets what is left, at most 90 s.
set -uo pipefail
mode=${1:-preset}
minutes=${2:-7}
OUT=${OUT:?set OUT to the folder for the results}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
t0=$(date +%s)  # the call's clock: the install counts
[ -d .gpu_wheels/site/ray ] || bash .gpu_wheels/install.sh || exit 1
# a bundle that unpacked Ray's wheel with python -m zipfile lost the executable bits of its servers
# (scripts/gpu_bundle.sh keeps them; this costs nothing on its bundles)
find .gpu_wheels/site/ray/core/src -type f ! -name "*.py" -exec chmod +x {} +
find .gpu_data -name "*.xz" | while read -r f; do [ -f "${f%.xz}" ] || xz -dk "$f"; done
export PYTHONPATH=$here/.gpu_wheels/site STOCKFISH_BIN=$here/.gpu_wheels/site/bin/stockfish
export ZEROCHESS_DATA=$here/.gpu_data PYTHONUNBUFFERED=1
games=${GAMES:-1024}
call_s=${CALL_S:-590}
seconds=$(python3 -c "print(round(float('$minutes') * 60))")
read -r -a preset_set <<< "${PRESET_SET:-}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$OUT/gpu.txt" 2>&1
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -l 2 >> "$OUT/smi_$mode.csv" 2>&1 &
smi=$!
left() { echo $(( call_s - ($(date +%s) - t0) )); }
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/steps.txt"; }
# run_preset NAME TAG: configs/NAME.yaml's run for $minutes minutes (bench/gpu_run.py, PRESET_SET added),
# $OUT/TAG.json and TAG.log, then the run's network, config, evaluation and logs as $OUT/NAME_run.tgz
run_preset() {
  stamp "$2: configs/$1.yaml for $minutes minutes"
  local limit=$(( seconds + 100 )) room=$(( $(left) - 45 ))  # 45 s: the kill's grace, the tarball, the bench's floor
  [ "$room" -lt "$limit" ] && limit=$room
  stamp "$2: stopped by SIGTERM after $limit s at the latest"
  timeout --signal=TERM --kill-after=15 "$limit" python3 bench/gpu_run.py \
     --config "configs/$1.yaml" --minutes "$minutes" --runs-dir runs --name "$1" --no-bench \
     ${preset_set[@]+--set "${preset_set[@]}"} > "$OUT/$2.json" 2> "$OUT/$2.log"
  stamp "$2 done (exit $?)"
  local keep=() p
  for p in config.yaml network eval tb games.pgn; do [ -e "runs/$1/$p" ] && keep+=("$1/$p"); done
  tar -czf "$OUT/$1_run.tgz" -C runs "${keep[@]}" 2>> "$OUT/steps.txt"
}

if [ "$mode" = preset ]; then
  run_preset chess_gpu preset
  base=.baseline; [ -d "$base" ] || base=.
  budget=$(( $(left) - 5 )); [ "$budget" -gt 90 ] && budget=90
  if [ "$budget" -ge 30 ]; then
    stamp "baseline: $base (the code before the change, else this one), bench/selfplay.py, chess_cpu at $games games, $budget s at most"
    (cd "$base" && XLA_PYTHON_CLIENT_MEM_FRACTION=.5 timeout "$budget" python3 bench/selfplay.py --config configs/chess_cpu.yaml \
       --no-baseline --plies 5 --set actors.games_per_actor="$games" learner.batch_size=1024) \
       > "$OUT/baseline_bench.json" 2> "$OUT/baseline_bench.log"
    stamp "baseline done (exit $?)"
  else
    stamp "baseline skipped: $budget s left of the call"
  fi
elif [ "$mode" = warm ]; then
  run_preset chess_warm_gpu warm
elif [ "$mode" = compare ]; then
  common=(--config configs/chess_cpu.yaml --set actors.games_per_actor=4096 actors.num_actors=2 actors.num_gpus=0.5
          actors.num_cpus=2 actors.plies_per_call=8 learner.batch_size=1024 replay.window_positions=1000000
          replay.min_positions=20000 replay.games_per_chunk=1024 evaluation.enabled=false ray_num_cpus=16
          ray_object_store_mb=4096)
  stamp "new code: chess_cpu's network in the real run, 2 actors x 4096 games, 1.5 minutes"
  timeout 200 python3 bench/gpu_run.py "${common[@]}" --minutes 1.5 --runs-dir runs --name cpu_net --plies 3 \
     --train-steps 10 > "$OUT/compare_new.json" 2> "$OUT/compare_new.log"
  stamp "baseline (.baseline/): the one-actor run, 1.5 minutes"
  (cd .baseline && XLA_PYTHON_CLIENT_PREALLOCATE=false timeout 150 python3 selfplay.py --config configs/chess_cpu.yaml \
     --no-progress --set actors.num_gpus=1 actors.games_per_actor=1024 learner.batch_size=1024 \
     replay.window_positions=1000000 replay.min_positions=20000 evaluation.enabled=false ray_num_cpus=16 \
     ray_object_store_mb=4096 max_minutes=1.5 runs_dir=../runs name=old_run) > "$OUT/compare_old.log" 2>&1
  stamp "done"
elif [ "$mode" = sweep ]; then
  for setting in "chess_gpu 2048" "chess_gpu 4096" "chess_gpu 8192" "chess_cpu 4096" "chess_cpu 8192"; do
    read -r preset g <<< "$setting"
    stamp "ply loop: $preset at $g games"
    timeout 120 python3 bench/selfplay.py --config "configs/$preset.yaml" --no-baseline --plies 5 --train-steps 10 \
       --set actors.games_per_actor="$g" learner.batch_size=1024 >> "$OUT/sweep.jsonl" 2>> "$OUT/sweep.log"
  done
fi
kill $smi 2>/dev/null
exit 0
