#!/usr/bin/env bash
# Fails when a tracked C++ file is not clang-formatted (.clang-format: Google).
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r -d '' f; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not clang-formatted: $f"
    bad=1
  fi
done < <(git ls-files -z '*.cc' '*.h')
if [ $bad -ne 0 ]; then
  echo "format check: FAILED (run: clang-format -i <file>)"
  exit 1
fi
echo "format check: ok"
