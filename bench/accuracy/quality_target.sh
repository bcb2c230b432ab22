#!/bin/bash
# The quality target's figures (issue 17 item 4): ppocr_rec and ppocr_det at
# --target-sqnr T (default 30) with a TPC (default imx500@5.0), against the
# plain 8-bit job: output SQNR on the search's samples (the first 16
# calibration samples), then ONNX Runtime at its default optimization level
# on the held-out samples (CER of the greedy CTC decode, IoU of the text
# map), and total memory against the 8-bit baseline (report.json). When the
# target is out of reach the job fails naming the best figure; the script
# then quantizes again at that figure (minus 0.01 dB) to measure the best
# configuration the search found.
#
#   QUANTD_CACHE_DIR=/work/main/.cache bench/accuracy/quality_target.sh \
#       [imx500@5.0] [30] [ppocr_rec ppocr_det]
set -u
TPC=${1:-imx500@5.0}
TARGET=${2:-30}
shift 2 2>/dev/null
MODELS=${*:-ppocr_rec ppocr_det}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
Q=${QUANTCTL:-$ROOT/build/clients/quantctl/quantctl}
C=${QUANTD_CACHE_DIR:-$ROOT/.cache}
W=${WORK_DIR:-/tmp/quantd_quality_target}
RUN="node $ROOT/tools/ort/run_model.js"
mkdir -p "$W"

json() {  # json FILE EXPR (python over report.json as r)
  /usr/bin/python3 -c "import json,sys; r=json.load(open('$1')); print($2)"
}

score() {  # score MODEL FLOAT_DIR QDQ_DIR
  if [ "$1" = ppocr_rec ]; then
    /usr/bin/python3 "$ROOT/bench/accuracy/ctc_cer.py" "$2" "$3"
  else
    /usr/bin/python3 "$ROOT/bench/accuracy/map_iou.py" "$2" "$3"
  fi
}

for M in $MODELS; do
  D=$W/$M
  rm -rf "$D"; mkdir -p "$D"
  $RUN "$C/models/$M.onnx" --inputs "$C/samples/$M/heldout" --out "$D/float" \
      > /dev/null
  "$Q" quantize "$C/models/$M.onnx" --tpc "$TPC" --calib "$C/samples/$M/calib" \
      --out "$D/base" --quiet
  start=$(date +%s)
  if ! "$Q" quantize "$C/models/$M.onnx" --tpc "$TPC" \
      --calib "$C/samples/$M/calib" --out "$D/target" --quiet \
      --target-sqnr "$TARGET" 2> "$D/target.err"; then
    echo "$M: $(tail -1 "$D/target.err")"
    best=$(sed -n 's/.*: best \(-\{0,1\}[0-9.]*\) dB.*/\1/p' "$D/target.err")
    [ -z "$best" ] && continue
    at=$(/usr/bin/python3 -c "print(f'{$best - 0.01:.2f}')")
    "$Q" quantize "$C/models/$M.onnx" --tpc "$TPC" \
        --calib "$C/samples/$M/calib" --out "$D/target" --quiet --force \
        --target-sqnr "$at" || continue
  fi
  secs=$(( $(date +%s) - start ))
  for V in base target; do
    $RUN "$D/$V/model.qdq.onnx" --inputs "$C/samples/$M/heldout" \
        --out "$D/$V.ort" --optimization all > /dev/null
  done
  R=$D/target/report.json
  echo "$M @ $TPC, --target-sqnr $TARGET ($secs s for the target job(s)):"
  echo "  8-bit:  SQNR $(json "$D/base/report.json" "round(r['output_sqnr_db'],2)") dB;" \
       "ORT held-out $(score "$M" "$D/float" "$D/base.ort")"
  echo "  target: SQNR $(json "$R" "round(r['output_sqnr_db'],2)") dB" \
       "(met: $(json "$R" "r['quality_target']['met']"));" \
       "ORT held-out $(score "$M" "$D/float" "$D/target.ort")"
  echo "  total memory vs 8-bit: $(json "$R" "round(r['quality_target']['memory_vs_8bit']['total'],3)")," \
       "activation $(json "$R" "round(r['quality_target']['memory_vs_8bit']['activation'],3)");" \
       "changes: $(json "$R" "len(r['quality_target']['changes'])")" \
       "($(json "$R" "', '.join(sorted(set(c['what']+' '+c['from']+'->'+c['to'] for c in r['quality_target']['changes']))) or 'none'"))"
done
