#!/usr/bin/env bash
# The image's build stage (docker/Dockerfile): configures a plain optimised
# tree, builds, runs the unit tests, and installs quantd and quantctl
# (cmake --install, components server and cli, stripped) into OUT.
#
# Usage: docker/build_stage.sh OUT
#   RUN_TESTS=1 (default)  build the tree and run the unit tests (below)
#   RUN_TESTS=0            build quantd and quantctl only, no tests
#   JOBS                   parallel jobs (default: all CPUs)
#   BUILD_DIR              build tree (default: build)
#
# Unit tests: exactly the ctest labels core, server and farm (anchored), so
# not core_shared_fixtures (reads ../shared/fixtures, which is outside the
# repository and so outside the build context), farm_integration,
# integration, e2e, load, fault, fuzz, deploy (tests/CMakeLists.txt). No
# ctest fixture is pulled in (-FA): the real-model setup (e2e_models) would
# download models; the unit tests that use them skip without them.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly UNIT_LABELS='^(core|server|farm)$'

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUT" >&2
  exit 2
fi
out=$1
build=${BUILD_DIR:-build}
jobs=${JOBS:-}
[[ -n $jobs ]] || jobs=$(nproc)
case "${RUN_TESTS:-1}" in
  1) tests=ON ;;
  0) tests=OFF ;;
  *)
    echo "build_stage: RUN_TESTS must be 0 or 1, not '${RUN_TESTS}'" >&2
    exit 2
    ;;
esac

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DQUANTD_BUILD_TESTS="$tests" -DQUANTD_BUILD_BENCH=OFF
if [[ $tests == ON ]]; then
  cmake --build "$build" -j "$jobs"
  ctest --test-dir "$build" --output-on-failure --no-tests=error \
    -j "$jobs" -L "$UNIT_LABELS" -FA '.*'
else
  echo "build_stage: RUN_TESTS=0, building quantd and quantctl without tests"
  cmake --build "$build" -j "$jobs" --target quantd quantctl
fi
for component in server cli; do
  cmake --install "$build" --prefix "$out" --component "$component" --strip
done
