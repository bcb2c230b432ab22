#!/bin/bash
# PTQ of ppocr_rec (PP-OCRv3's recogniser: a MobileNetV1-family backbone,
# six BatchNormalization nodes left unfolded by its export) with generated vs
# real calibration data, scored in ONNX Runtime at its default level on the
# held-out real text lines as CER against the float decode
# (docs/data_generation.md).
#   bench/datagen/eval_ppocr_rec.sh BUILD_DIR WORK_DIR [COUNT] [ITERATIONS] [THREADS]
set -euo pipefail
build=${1:-build}; work=${2:-/tmp/dg_rec}; n=${3:-16}; iters=${4:-200}; threads=${5:-2}
cache=${QUANTD_CACHE_DIR:-.cache}
ort=${QUANTD_ORT_RUNNER:-tools/ort/run_model.js}
model=$cache/models/ppocr_rec.onnx
quantctl=$build/clients/quantctl/quantctl
here=$(dirname "$0")
mkdir -p "$work"
if [ ! -d "$work/gen$n" ]; then
  /usr/bin/time -f "generate: %e s wall, %U s user" "$quantctl" generate-data "$model" \
    --count "$n" --out "$work/gen$n" --shape 3,48,320 --iterations "$iters" \
    --batch-size "$n" --input-min -1 --input-max 1 --threads "$threads" --quiet
fi
if [ ! -d "$work/noise$n" ]; then  # one step: Gaussian noise, smoothed and clipped
  "$quantctl" generate-data "$model" --count "$n" --out "$work/noise$n" --shape 3,48,320 \
    --iterations 1 --lr 1e-9 --input-min -1 --input-max 1 --quiet
fi
[ -d "$work/ort_float" ] || node "$ort" "$model" --inputs "$cache/samples/ppocr_rec/heldout" \
  --out "$work/ort_float" > /dev/null
for calib in "gen$n:$work/gen$n" "real:$cache/samples/ppocr_rec/calib" "noise$n:$work/noise$n"; do
  tag=${calib%%:*}; dir=${calib#*:}
  [ -f "$work/q_$tag/model.qdq.onnx" ] || "$quantctl" quantize "$model" --tpc imx500@4.1 \
    --calib "$dir" --out "$work/q_$tag" --force --quiet --threads "$threads" > /dev/null
  [ -d "$work/ort_$tag" ] || node "$ort" "$work/q_$tag/model.qdq.onnx" \
    --inputs "$cache/samples/ppocr_rec/heldout" --out "$work/ort_$tag" > /dev/null
  printf '%-8s ' "$tag"
  /usr/bin/python3 "$here/../accuracy/ctc_cer.py" "$work/ort_float" "$work/ort_$tag"
done
