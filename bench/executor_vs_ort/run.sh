#!/usr/bin/env bash
# quantd's executor vs ONNX Runtime (onnxruntime-node, CPU EP) on real CNNs:
# time per sample, ours / ORT's, same machine, same run, 1 and 2 threads.
#
#   bench/executor_vs_ort/run.sh [MODEL...]    (default: ppocr_det ppocr_cls oww_embedding)
#
# Env: BUILD_DIR (default build), WARMUP (1), REPEAT (5), SPLIT (heldout),
# THREADS ("1 2"), ORT_OPT (all), ROUNDS (3). Both sides run every sample
# WARMUP times untimed and REPEAT times timed and report the mean over samples
# of the per-sample median; ORT uses intra_op_num_threads = N, we use N
# threads in all (caller + N-1 workers). Each (model, threads) pair is timed
# ROUNDS times, alternating quantd and ORT, and each side keeps its fastest
# round, so a burst of load on the shared machine hits neither side alone.
# The load average before and after is printed: compare ratios only from
# runs on a quiet machine. Target: ratio <= 1.5; goal <= 1.0.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
WARMUP="${WARMUP:-1}"
REPEAT="${REPEAT:-5}"
SPLIT="${SPLIT:-heldout}"
THREADS="${THREADS:-1 2}"
ORT_OPT="${ORT_OPT:-all}"
ROUNDS="${ROUNDS:-3}"
MODELS=("$@")
((${#MODELS[@]})) || MODELS=(ppocr_det ppocr_cls oww_embedding)

if ! cmake --build "$BUILD_DIR" --target quantd_timing -j 2 >"${TMPDIR:-/tmp}/executor_vs_ort_build.log" 2>&1; then
  grep -E "error|FAILED" "${TMPDIR:-/tmp}/executor_vs_ort_build.log" | head -n 20 >&2
  echo "run.sh: building quantd_timing in $BUILD_DIR failed" >&2
  exit 1
fi
CACHE="$("$ROOT/scripts/fetch_models.sh" | tail -n 1)"
"$ROOT/scripts/install_ort.sh" >/dev/null
TIMING="$BUILD_DIR/bench/executor_vs_ort/quantd_timing"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "executor vs ONNX Runtime $(node -p "require('$ROOT/tools/ort/node_modules/onnxruntime-node/package.json').version") (optimization $ORT_OPT), $SPLIT samples, warmup $WARMUP, median of $REPEAT, best of $ROUNDS rounds"
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); load average (1/5/15 min) before: $(load)"
printf '%-20s %7s %9s %14s %12s %8s\n' model threads samples "quantd ms" "ORT ms" ratio
status=0
for model in "${MODELS[@]}"; do
  onnx="$CACHE/models/$model.onnx"
  samples="$CACHE/samples/$model/$SPLIT"
  for n in $THREADS; do
    ours_best="" ort_best="" count=0 failed=0
    for ((round = 0; round < ROUNDS; ++round)); do
      if ! ours_json="$("$TIMING" "$onnx" --inputs "$samples" --threads "$n" \
                          --warmup "$WARMUP" --repeat "$REPEAT" 2>"$TMP/err")"; then
        printf '%-20s %7s  quantd failed: %s\n' "$model" "$n" "$(tail -n 1 "$TMP/err")"
        failed=1
        break
      fi
      node "$ROOT/tools/ort/run_model.js" "$onnx" --inputs "$samples" --threads "$n" \
        --optimization "$ORT_OPT" --warmup "$WARMUP" --repeat "$REPEAT" \
        --timing "$TMP/ort.json" 2>/dev/null
      read -r ours ort count < <(node -e '
        const ours = JSON.parse(process.argv[1]);
        const ort = require(process.argv[2]);
        console.log(ours.mean_of_median_ms, ort.mean_of_median_ms, ours.samples);
      ' "$ours_json" "$TMP/ort.json")
      ours_best="$(awk -v a="$ours" -v b="${ours_best:-$ours}" 'BEGIN { print (a < b ? a : b) }')"
      ort_best="$(awk -v a="$ort" -v b="${ort_best:-$ort}" 'BEGIN { print (a < b ? a : b) }')"
    done
    if ((failed)); then
      status=1
      continue
    fi
    awk -v m="$model" -v n="$n" -v s="$count" -v q="$ours_best" -v o="$ort_best" \
      'BEGIN { printf "%-20s %7s %9s %14.3f %12.3f %8.2f\n", m, n, s, q, o, q / o }'
  done
done
echo "load average (1/5/15 min) after: $(load)"
exit $status
