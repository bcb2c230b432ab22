#!/usr/bin/env bash
# Copies the built quantd and quantctl executables from a CMake build
# directory into OUT/bin, stripped, for the image's runtime stage.
# Usage: docker/install_binaries.sh BUILD_DIR OUT
# Each binary is looked up by name (not by a fixed path) so the layout of the
# build tree may change; zero or several matches are an error.
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR OUT" >&2
  exit 2
fi
build_dir=$1
out=$2

mkdir -p "$out/bin"
for name in quantd quantctl; do
  mapfile -t found < <(find "$build_dir" -path '*/CMakeFiles' -prune -o \
    -type f -name "$name" -perm -u+x -print)
  if [[ ${#found[@]} -ne 1 ]]; then
    echo "install_binaries: expected one executable '$name' under $build_dir," \
      "found ${#found[@]}: ${found[*]:-none}" >&2
    exit 1
  fi
  install -m 0755 -s "${found[0]}" "$out/bin/$name"
  echo "install_binaries: ${found[0]} -> $out/bin/$name"
done
