#!/usr/bin/env bash
# The main job on the bundled example: builds quantd, then runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
build/clients/quantctl/quantctl version
