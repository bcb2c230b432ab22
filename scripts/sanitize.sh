#!/usr/bin/env bash
# Sanitizer builds and their test runs (docs/reliability.md).
#   scripts/sanitize.sh asan   clang + ASan + UBSan + libFuzzer instrumentation,
#                              whole tree, whole ctest suite (build-asan)
#   scripts/sanitize.sh tsan   clang + TSan, the core tests whose code runs
#                              on several threads (build-tsan)
# Extra arguments go to ctest. BUILD_DIR overrides the tree; JOBS the
# parallelism (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: scripts/sanitize.sh asan|tsan [ctest args]}
shift
JOBS=${JOBS:-$(nproc)}
supp="$PWD/scripts/sanitizers"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export TSAN_OPTIONS="suppressions=$supp/tsan.supp:halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"

configure() {  # dir, cmake args...
  local dir=$1
  shift
  # lld links the ~100 instrumented test binaries several times faster.
  local link=()
  if command -v ld.lld >/dev/null 2>&1; then
    link=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld
      -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld)
  fi
  if [ ! -f "$dir/build.ninja" ]; then
    CC=clang-14 CXX=clang++-14 cmake -S . -B "$dir" -G Ninja \
      -DCMAKE_BUILD_TYPE=Sanitize -DQUANTD_BUILD_BENCH=OFF "${link[@]}" "$@" \
      >/dev/null
  fi
}

case "$mode" in
  asan)
    dir=${BUILD_DIR:-build-asan}
    configure "$dir" -DQUANTD_SANITIZE=address,undefined -DQUANTD_FUZZ=ON
    cmake --build "$dir" -j "$JOBS"
    # One test more than cores: the server, fault and deploy tests spend
    # most of their time waiting (deadlines that must expire, servers
    # starting, cpack writing), ~110 of the suite's ~820 test-seconds;
    # a third slot fills those waits with another test's work.
    ctest --test-dir "$dir" --output-on-failure -j "$((JOBS + 1))" \
      --timeout 900 "$@"
    ;;
  tsan)
    dir=${BUILD_DIR:-build-tsan}
    configure "$dir" -DQUANTD_SANITIZE=thread
    # TSan looks for data races: it builds the core test binaries whose
    # code runs on several threads (thread pool, parallel kernels, jobs,
    # searches, MP, GPTQ, data generation, pruning, the TPC cache) and the
    # libraries they need. The single-threaded ones (graph, io, report, util)
    # run under ASan only. ctest runs what was built.
    targets=()
    for d in autodiff datagen executor hessian mixed_precision pipeline pruning \
      qdq quantizers runtime stats tpc train; do
      targets+=("tests/core/$d/all")
    done
    cmake --build "$dir" -j "$JOBS" --target "${targets[@]}"
    # TSan looks for races; the MCT golden cases are single-threaded numeric
    # code that the ASan run checks in full: every 8th case here.
    QUANTD_GOLDEN_STRIDE=${QUANTD_GOLDEN_STRIDE:-8} ctest --test-dir "$dir" --output-on-failure -j "$JOBS" --timeout 900 \
      -L core "$@"
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan [ctest args]" >&2
    exit 2
    ;;
esac
