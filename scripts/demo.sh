#!/usr/bin/env bash
# The main job on the bundled example: builds quantd, writes the example CNN
# and its sample images (deterministic, bench/ptq/make_example.cc), quantizes
# it for the IMX500 TPC in-process with `quantctl quantize`, and prints the
# report summary. Outputs land in ${DEMO_OUT:-build/demo/out}.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
EXAMPLE=${DEMO_EXAMPLE:-$BUILD_DIR/demo/example}
OUT=${DEMO_OUT:-$BUILD_DIR/demo/out}
"$BUILD_DIR/bench/ptq/make_ptq_example" "$EXAMPLE"
"$BUILD_DIR/clients/quantctl/quantctl" quantize "$EXAMPLE/example_cnn.onnx" \
  --tpc imx500@4.1 --calib "$EXAMPLE/calib" --eval "$EXAMPLE/eval" \
  --out "$OUT" --force --threads "${THREADS:-2}"
echo
echo "per-layer report ($OUT/report.json):"
/usr/bin/python3 - "$OUT/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{'node':<12} {'op':<18} {'op set':<16} {'W bits':>6} {'A bits':>6} {'SQNR dB':>8}")
for l in r["layers"]:
    s = "exact" if l["sqnr_db"] is None else f"{l['sqnr_db']:.2f}"
    print(f"{l['node']:<12} {l['op_type']:<18} {l['op_set']:<16} "
          f"{l['weights_bits']:>6} {l['activation_bits']:>6} {s:>8}")
ru = r["resource_utilization"]
sqnr = r["output_sqnr_db"]
print(f"weights {ru['weights_memory_bytes']:.0f} B, activations "
      f"{ru['activation_memory_bytes']:.0f} B, output SQNR "
      + ("exact" if sqnr is None else f"{sqnr:.2f} dB"))
for o in r["outputs"]:
    t = o["top1_agreement"]
    print(f"output {o['name']}: top-1 agreement with float "
          + ("n/a" if t is None else f"{100 * t:.1f}%"))
PY
echo "open $OUT/report.html in a browser for the chart"
