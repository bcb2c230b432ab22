#!/bin/bash
# The per-model accuracy table (bench/accuracy/RESULTS.md): for each model
# x TPC, the plain W8A8 job and the job at --target-sqnr T, both scored in
# ONNX Runtime at its default optimization level (run_model.js
# --optimization all) on the held-out
# samples against the float model in ORT, with the model's natural metric
# (score.py), plus the resources (report.json) and the job time. When the
# target is out of reach, --target-best-effort returns the best
# configuration the search found, whose report warning names its figure.
# quantd's own executor (quantctl infer) scores the same QDQ models, to show
# where ORT's default level departs.
#
#   QUANTD_CACHE_DIR=/work/main/.cache bench/accuracy/e2e_table.sh \
#       [-t "imx500@5.0 tflite@1.0 qnnpack@1.0"] [-s 30] [MODEL...]
#   bench/accuracy/e2e_table.sh -p [MODEL...]   # only print the table
#
# Results stay in $WORK_DIR/<model>/<tpc>/ (a finished pair is not run
# again: delete its folder to re-measure), so several invocations may run
# side by side on different models and one -p prints the whole table.
set -u
TPCS="imx500@5.0 tflite@1.0 qnnpack@1.0"
TARGET=30
PRINT_ONLY=0
while getopts "t:s:p" o; do
  case $o in
    t) TPCS=$OPTARG ;;
    s) TARGET=$OPTARG ;;
    p) PRINT_ONLY=1 ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
MODELS=${*:-ppocr_cls ppocr_det ppocr_rec oww_embedding oww_hey_jarvis silero_vad silero_vad_v5}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
Q=${QUANTCTL:-$ROOT/build/clients/quantctl/quantctl}
C=${QUANTD_CACHE_DIR:-$ROOT/.cache}
W=${WORK_DIR:-/tmp/quantd_e2e_table}
RUN="node $ROOT/tools/ort/run_model.js"
A=$ROOT/bench/accuracy

quantize() {  # quantize MODEL OUT [flags]: times the job into OUT.secs, peak RSS (KB) into OUT.rss
  local m=$1 out=$2; shift 2
  local start=$(date +%s.%N)
  /usr/bin/time -f %M -o "$out.rss" \
    "$Q" quantize "$C/models/$m.onnx" --tpc "$T" --calib "$C/samples/$m/calib" \
      --out "$out" --quiet --force "$@" > /dev/null 2> "$out.err"
  local rc=$?
  /usr/bin/python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')" >> "$out.secs"
  return $rc
}

evaluate() {  # evaluate MODEL DIR VARIANT: ORT default level and quantd
  local m=$1 d=$2 v=$3 h=$C/samples/$1/heldout
  $RUN "$d/$v/model.qdq.onnx" --inputs "$h" --out "$d/$v.ort" \
      --optimization all > /dev/null 2> "$d/$v.ort.err" &&
    /usr/bin/python3 "$A/score.py" "$m" "$W/$m/float" "$d/$v.ort" --json \
        > "$d/$v.ort.json"
  "$Q" infer "$d/$v/model.qdq.onnx" --inputs "$h" --out "$d/$v.quantd" \
      > /dev/null 2> "$d/$v.quantd.err" &&
    /usr/bin/python3 "$A/score.py" "$m" "$W/$m/float" "$d/$v.quantd" --json \
        > "$d/$v.quantd.json"
}

run_pair() {  # run_pair MODEL: the plain job and the target job at $T
  local m=$1 d=$W/$1/$T
  [ -f "$d/done" ] && return
  rm -rf "$d"; mkdir -p "$d"
  quantize "$m" "$d/base" && evaluate "$m" "$d" base
  if quantize "$m" "$d/target" --target-sqnr "$TARGET" --target-best-effort; then
    # Out of reach: the report's warning names the best figure.
    /usr/bin/python3 -c "import json, sys
r = json.load(open(sys.argv[1]))
if not r.get('quality_target', {}).get('met', True):
    print(next(w for w in r['warnings'] if 'out of reach' in w))" \
        "$d/target/report.json" > "$d/target.failed"
    [ -s "$d/target.failed" ] || rm -f "$d/target.failed"
    evaluate "$m" "$d" target
  else
    tail -1 "$d/target.err" > "$d/target.failed"
  fi
  touch "$d/done"
  echo "$m @ $T done: $(python3 "$A/e2e_table.py" "$W" "$m" | tail -n +3)"
}

if [ "$PRINT_ONLY" = 0 ]; then
  for m in $MODELS; do
    mkdir -p "$W/$m"
    [ -d "$W/$m/float" ] ||
      $RUN "$C/models/$m.onnx" --inputs "$C/samples/$m/heldout" \
          --out "$W/$m/float" --optimization all > /dev/null
    for T in $TPCS; do run_pair "$m"; done
  done
fi
/usr/bin/python3 "$A/e2e_table.py" "$W" $MODELS
