#!/usr/bin/env bash
# quantd's executor vs ONNX Runtime (onnxruntime-node, CPU EP) on real CNNs:
# time per sample, ours / ORT's, same machine, same run, 1 and 2 threads.
#
#   bench/executor_vs_ort/run.sh [MODEL...]    (default: ppocr_det ppocr_cls oww_embedding)
#
# Env: BUILD_DIR (default build), WARMUP (1), REPEAT (5), SPLIT (heldout),
# THREADS ("1 2"), ORT_OPT (all). Both sides run every sample WARMUP times
# untimed and REPEAT times timed and report the mean over samples of the
# per-sample median; ORT uses intra_op_num_threads = N, we use N threads in
# all (caller + N-1 workers). Target: ratio <= 1.5; goal <= 1.0.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
WARMUP="${WARMUP:-1}"
REPEAT="${REPEAT:-5}"
SPLIT="${SPLIT:-heldout}"
THREADS="${THREADS:-1 2}"
ORT_OPT="${ORT_OPT:-all}"
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

echo "executor vs ONNX Runtime $(node -p "require('$ROOT/tools/ort/node_modules/onnxruntime-node/package.json').version") (optimization $ORT_OPT), $SPLIT samples, warmup $WARMUP, median of $REPEAT"
printf '%-20s %7s %9s %14s %12s %8s\n' model threads samples "quantd ms" "ORT ms" ratio
status=0
for model in "${MODELS[@]}"; do
  onnx="$CACHE/models/$model.onnx"
  samples="$CACHE/samples/$model/$SPLIT"
  for n in $THREADS; do
    if ! ours_json="$("$TIMING" "$onnx" --inputs "$samples" --threads "$n" \
                        --warmup "$WARMUP" --repeat "$REPEAT" 2>"$TMP/err")"; then
      printf '%-20s %7s  quantd failed: %s\n' "$model" "$n" "$(tail -n 1 "$TMP/err")"
      status=1
      continue
    fi
    node "$ROOT/tools/ort/run_model.js" "$onnx" --inputs "$samples" --threads "$n" \
      --optimization "$ORT_OPT" --warmup "$WARMUP" --repeat "$REPEAT" \
      --timing "$TMP/ort.json" 2>/dev/null
    node -e '
      const ours = JSON.parse(process.argv[1]);
      const ort = require(process.argv[2]);
      const ratio = ours.mean_of_median_ms / ort.mean_of_median_ms;
      console.log(`${process.argv[3].padEnd(20)} ${String(process.argv[4]).padStart(7)} ` +
                  `${String(ours.samples).padStart(9)} ${ours.mean_of_median_ms.toFixed(3).padStart(14)} ` +
                  `${ort.mean_of_median_ms.toFixed(3).padStart(12)} ${ratio.toFixed(2).padStart(8)}`);
    ' "$ours_json" "$TMP/ort.json" "$model" "$n"
  done
done
exit $status
