#!/bin/bash
# PTQ of ppocr_cls with generated vs real calibration data, scored in ONNX
# Runtime on the held-out real inputs (docs/data_generation.md).
#   bench/datagen/eval_ppocr_cls.sh BUILD_DIR WORK_DIR [COUNT] [ITERATIONS] [LR]
set -euo pipefail
build=${1:-build}; work=${2:-/tmp/dg_eval}; n=${3:-32}; iters=${4:-200}; lr=${5:-1}
cache=${QUANTD_CACHE_DIR:-.cache}
ort=${QUANTD_ORT_RUNNER:-tools/ort/run_model.js}
model=$cache/models/ppocr_cls.onnx
quantctl=$build/clients/quantctl/quantctl
mkdir -p "$work"
if [ ! -d "$work/gen$n" ]; then
  /usr/bin/time -f "generate: %e s wall, %U s user" "$quantctl" generate-data "$model" \
    --count "$n" --out "$work/gen$n" --shape 3,48,192 --iterations "$iters" \
    --batch-size "$n" --input-min -1 --input-max 1 --lr "$lr" --threads 2 --quiet
fi
if [ ! -d "$work/noise$n" ]; then  # one step: Gaussian noise, smoothed and clipped
  "$quantctl" generate-data "$model" --count "$n" --out "$work/noise$n" --shape 3,48,192 \
    --iterations 1 --lr 1e-9 --input-min -1 --input-max 1 --quiet
fi
for calib in "gen$n:$work/gen$n" "real$n:$cache/samples/ppocr_cls/calib" "noise$n:$work/noise$n"; do
  tag=${calib%%:*}; dir=${calib#*:}
  [ -f "$work/q_$tag/model.qdq.onnx" ] || "$quantctl" quantize "$model" --tpc imx500@4.1 \
    --calib "$dir" --out "$work/q_$tag" --force --quiet --threads 2 > /dev/null
  [ -d "$work/ort_$tag" ] || node "$ort" "$work/q_$tag/model.qdq.onnx" \
    --inputs "$cache/samples/ppocr_cls/heldout" --out "$work/ort_$tag" > /dev/null
done
[ -d "$work/ort_float" ] || node "$ort" "$model" --inputs "$cache/samples/ppocr_cls/heldout" \
  --out "$work/ort_float" > /dev/null
/usr/bin/python3 "$(dirname "$0")/score.py" "$work/ort_float" softmax_0.tmp_0 \
  "$work/ort_gen$n" "$work/ort_real$n" "$work/ort_noise$n"
