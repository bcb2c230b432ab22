#!/usr/bin/env bash
# Runs every libFuzzer target of the ASan tree for a bounded time each.
#   scripts/fuzz.sh [SECONDS per target, default 20] [target...]
# Seeds: generated ones (make_fuzz_seeds), ONNX's test data, the MCT fixture
# TPCs and tests/fuzz/regressions. The growing corpus and any crash input
# stay in $BUILD_DIR/fuzz/ (corpus/<target>, crashes/<target>); a crash
# fails the script. Prints one line per target: executions, coverage
# (libFuzzer's cov:/ft:), corpus size. Needs `scripts/sanitize.sh asan`
# (or the same build) first. FUZZ_SEED (default 0: random) fixes libFuzzer's
# seed: the test command uses 1, so a CI run is reproducible and a finding
# reappears on the next run instead of at random.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
BUILD_DIR=${BUILD_DIR:-build-asan}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(onnx_import tensor_proto npy tpc quantize_request upload_assembler
           side_requests)
fi
src=$PWD
work="$BUILD_DIR/fuzz"
seeds="$work/seeds"
testdata=/usr/share/libonnx-testdata/data
export ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

build_targets=(make_fuzz_seeds)
for t in "${targets[@]}"; do build_targets+=("${t}_fuzzer"); done
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target "${build_targets[@]}" >/dev/null
rm -rf "$seeds"
"$BUILD_DIR/tests/fuzz/make_fuzz_seeds" "$seeds"
# The fixture TPCs as tpc_fuzzer reads JSON: a 0 byte, then the document.
mkdir -p "$seeds/tpc"
for f in "$src"/../shared/fixtures/mct-tpc/*.json; do
  [ -f "$f" ] || continue
  { printf '\0'; cat "$f"; } >"$seeds/tpc/fixture_$(basename "$f")"
done

extra_seeds() {  # target -> extra seed directories
  case "$1" in
    onnx_import) [ -d "$testdata" ] && echo "$testdata/node $testdata/simple" ;;
    tensor_proto) [ -d "$testdata" ] && echo "$testdata/node" ;;
  esac
  true
}

max_len() {
  case "$1" in
    onnx_import | quantize_request | side_requests) echo 262144 ;;
    tpc) echo 65536 ;;
    *) echo 16384 ;;
  esac
}

# One target: its line of figures, or FAILED with the crash input's place.
fuzz_one() {
  local t=$1 corpus="$work/corpus/$1" crashes="$work/crashes/$1"
  local log="$work/$1.log"
  mkdir -p "$corpus" "$crashes" "$seeds/$t"
  # shellcheck disable=SC2046
  if ! "$BUILD_DIR/tests/fuzz/${t}_fuzzer" "$corpus" "$seeds/$t" \
    "$src/tests/fuzz/regressions/$t" $(extra_seeds "$t") \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2560 \
    -max_len="$(max_len "$t")" -artifact_prefix="$crashes/" \
    -seed="${FUZZ_SEED:-0}" -print_final_stats=1 >"$log" 2>&1; then
    echo "fuzz $t: FAILED, input in $crashes/, log $log"
    grep -E "ERROR|SUMMARY|==[0-9]+==|#[0-9]+ +in " "$log" | head -20 || true
    return 1
  fi
  local execs last
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo '?')
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9a-zA-Z]+' || echo '?')
  echo "fuzz $t: ok, ${seconds}s, $execs execs, $last"
}

# JOBS targets at a time (default: all cores), each on one core.
status=0
pids=()
for t in "${targets[@]}"; do
  fuzz_one "$t" >"$work/$t.result" &
  pids+=("$!")
  if [ ${#pids[@]} -ge "${JOBS:-$(nproc)}" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
for t in "${targets[@]}"; do cat "$work/$t.result"; done
exit $status
