#!/usr/bin/env bash
# The test command (README, .ci/run), docs/reliability.md:
#   1. setup: installs missing Debian packages
#   2. format check
#   3. asan: ASan + UBSan tree (clang; -O1 but -O2 for the numeric
#      libraries; libFuzzer coverage for the fuzzed ones), build and the whole
#      ctest suite, real-model tests on fewer samples (tests/e2e/e2e_scale.h)
#      (scripts/sanitize.sh asan)
#   4. fuzz: every fuzz target for FUZZ_SECONDS (default 20) each, one per
#      core, libFuzzer seed FUZZ_SEED (default 1) (scripts/fuzz.sh)
#   5. tsan: TSan tree of the core tests that run on several threads
#      (scripts/sanitize.sh tsan); TSAN=0 skips it
#   6. only with PLAIN=1: the plain optimised build (scripts/build.sh) and
#      its ctest run, real-model tests at full scale. Off by default: it
#      costs ~16 CPU-min and the ASan run covers the same tests;
#      scripts/demo.sh and the benchmarks build it.
# Ends with the CPU time (user+sys, children included) and wall time of each
# phase. Extra arguments go to the ASan ctest run.
set -euo pipefail
cd "$(dirname "$0")/.."

summary=()
# cpu_now VAR: VAR = user+sys seconds of this shell's finished children.
# `times` must run in this shell itself: inside $(...) it would report the
# subshell's own (none).
times_file=$(mktemp)
cpu_now() {
  times >"$times_file"
  printf -v "$1" '%s' "$(tail -1 "$times_file" | awk '{
    t = 0
    for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }
    printf "%.1f", t }')"
}
print_summary() {
  local cpu
  cpu_now cpu
  echo "=== time by phase"
  printf '%s\n' "${summary[@]}"
  echo "total          $(awk -v c="$cpu" 'BEGIN { printf "%7.1f", c / 60 }') CPU-min $(awk -v w=$SECONDS 'BEGIN { printf "%6.1f", w / 60 }') wall-min"
  rm -f "$times_file"
}
trap print_summary EXIT
phase() {  # name command... (a failed phase is recorded too, then stops the run)
  local name=$1 cpu0 cpu1 rc=0 wall0=$SECONDS
  shift
  cpu_now cpu0
  echo "=== $name"
  "$@" || rc=$?
  cpu_now cpu1
  summary+=("$(awk -v n="$name" -v c0="$cpu0" -v c1="$cpu1" -v w=$((SECONDS - wall0)) -v rc=$rc \
    'BEGIN { printf "%-14s %7.1f CPU-min %6.1f wall-min%s", n, (c1 - c0) / 60, w / 60, rc ? "  FAILED" : "" }')")
  return $rc
}
plain() {
  scripts/build.sh
  ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure \
    -j "${JOBS:-$(nproc)}" --timeout 900
}

phase setup scripts/setup.sh
phase format scripts/check_format.sh
phase asan scripts/sanitize.sh asan "$@"
export FUZZ_SEED=${FUZZ_SEED:-1}
phase fuzz scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
if [ "${TSAN:-1}" = 1 ]; then
  phase tsan scripts/sanitize.sh tsan
fi
if [ "${PLAIN:-0}" = 1 ]; then
  phase plain plain
fi
