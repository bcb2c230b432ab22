#!/usr/bin/env bash
# ctest fixture: ONNX Runtime's outputs for every real model's held-out
# samples, the reference of real_models_test.
#   ort_reference.sh CACHE_DIR OUT_DIR
# writes OUT_DIR/<model>/<sample>/<output>.npy (intra-op threads 1, graph
# optimizations disabled, so ORT computes the graph as written).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE="$1"
OUT="$2"
"$ROOT/scripts/install_ort.sh" >/dev/null
for model in "$CACHE"/models/*.onnx; do
  name="$(basename "$model" .onnx)"
  samples="$CACHE/samples/$name/heldout"
  [[ -d "$samples" ]] || continue
  rm -rf "${OUT:?}/$name"
  node "$ROOT/tools/ort/run_model.js" "$model" --inputs "$samples" --out "$OUT/$name" \
    --threads 1 --optimization disabled 2>&1 | tail -n 1 | sed "s|^|$name: |"
done
