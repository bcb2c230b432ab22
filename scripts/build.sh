#!/usr/bin/env bash
# Configures and builds quantd. BUILD_DIR (default build) and extra CMake
# arguments may be given: scripts/build.sh -DQUANTD_SANITIZE=address,undefined
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja "$@"
fi
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
