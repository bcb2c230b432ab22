#!/bin/bash
# PTQ of the shared MobileNetV2 (BN folded, untrained; its BN statistics were
# warmed up on N(0, 1) images) with generated vs "real" calibration data,
# scored in ONNX Runtime on held-out N(0, 1) images (docs/data_generation.md).
# The folded BN's statistics are passed with --stats: every Conv output was
# a BatchNormalization output with torchvision's initial gamma = 1, beta = 0,
# so its expected per-channel mean is 0 and std 1.
#   bench/datagen/eval_mobilenet_v2.sh BUILD_DIR WORK_DIR [COUNT] [ITERATIONS]
set -euo pipefail
build=${1:-build}; work=${2:-/tmp/dg_mv2}; n=${3:-16}; iters=${4:-200}
here=$(cd "$(dirname "$0")" && pwd)
model=${QUANTD_MOBILENET_V2:-$here/../../../shared/fixtures/bench-models/mobilenet_v2.onnx}
ort=${QUANTD_ORT_RUNNER:-tools/ort/run_model.js}
quantctl=$build/clients/quantctl/quantctl
mkdir -p "$work"
/usr/bin/python3 - "$model" "$work" "$n" <<'PY'
import json, os, sys
import numpy as np
import onnx
from onnx import numpy_helper
model, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
m = onnx.load(model)
consts = {o.output[0]: numpy_helper.to_array(o.attribute[0].t)
          for o in m.graph.node if o.op_type == "Constant"}
consts.update({t.name: numpy_helper.to_array(t) for t in m.graph.initializer})
stats = {c.output[0]: {"mean": [0.0] * consts[c.input[1]].shape[0],
                       "std": [1.0] * consts[c.input[1]].shape[0]}
         for c in m.graph.node if c.op_type == "Conv"}
json.dump(stats, open(os.path.join(work, "stats.json"), "w"))
for name, seed, count in (("real%d" % n, 0, n), ("heldout", 1, 64)):
    rng = np.random.default_rng(seed)
    for i in range(count):
        d = os.path.join(work, name, "s%03d" % i)
        os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "input.npy"),
                rng.standard_normal((1, 3, 224, 224), dtype=np.float32))
PY
if [ ! -d "$work/gen$n" ]; then
  /usr/bin/time -f "generate: %e s wall, %U s user" "$quantctl" generate-data "$model" \
    --count "$n" --batch-size "$n" --iterations "$iters" --stats "$work/stats.json" \
    --out "$work/gen$n" --threads 2 --quiet
fi
if [ ! -d "$work/noise$n" ]; then  # one step: Gaussian noise, smoothed and clipped
  "$quantctl" generate-data "$model" --count "$n" --batch-size "$n" --iterations 1 \
    --lr 1e-9 --stats "$work/stats.json" --out "$work/noise$n" --quiet
fi
for tag in "gen$n" "real$n" "noise$n"; do
  [ -f "$work/q_$tag/model.qdq.onnx" ] || "$quantctl" quantize "$model" --tpc imx500@4.1 \
    --calib "$work/$tag" --out "$work/q_$tag" --force --quiet --threads 2 > /dev/null
  [ -d "$work/ort_$tag" ] || node "$ort" "$work/q_$tag/model.qdq.onnx" \
    --inputs "$work/heldout" --out "$work/ort_$tag" > /dev/null
done
[ -d "$work/ort_float" ] || node "$ort" "$model" --inputs "$work/heldout" \
  --out "$work/ort_float" > /dev/null
/usr/bin/python3 "$here/score.py" "$work/ort_float" logits \
  "$work/ort_gen$n" "$work/ort_real$n" "$work/ort_noise$n"
