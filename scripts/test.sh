#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs the whole suite
# (ctest) and the format check.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
scripts/check_format.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 900 "$@"
