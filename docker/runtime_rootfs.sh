#!/usr/bin/env bash
# The image's runtime files (docker/Dockerfile): lays out, under ROOTFS, the
# installed binaries of OUT (docker/build_stage.sh), tini, and exactly the
# shared libraries the binaries load that the base image does not have, as
# `ldd` resolves them here in the build stage, each at the path ldd names
# (merged /usr: /lib/... goes to /usr/lib/...), symlinks resolved. The
# runtime stage copies ROOTFS onto debian:RELEASE-slim in one layer.
#
# Usage: docker/runtime_rootfs.sh OUT ROOTFS BASE_PACKAGES
#   OUT            prefix of the installed binaries (OUT/bin/quantd, quantctl)
#   ROOTFS         folder to fill (created)
#   BASE_PACKAGES  file with the packages of the base image, one a line
#                  (dpkg-query -W -f '${Package}\n' before anything is
#                  installed): their libraries are left out, the slim
#                  runtime base has the same packages.
#
# Besides the libraries: gRPC's default root certificates
# (/usr/share/grpc/roots.pem, which `quantctl --tls` without --tls-ca reads)
# and the copyright file of every package a copied file comes from.
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 OUT ROOTFS BASE_PACKAGES" >&2
  exit 2
fi
out=$1
rootfs=$2
base_packages=$3
readonly BINARIES=(quantd quantctl)

# The Debian package that ships PATH (dpkg knows one of its merged-/usr
# spellings or, for an alternatives link, its target), or nothing.
owner() {
  local path=$1 real form
  real=$(readlink -f "$path")
  for form in "$path" "$real" "${path#/usr}" "/usr$path" "${real#/usr}" "/usr$real"; do
    if dpkg-query -S "$form" >/dev/null 2>&1; then
      dpkg-query -S "$form" 2>/dev/null | head -n1 | cut -d: -f1 | cut -d, -f1
      return
    fi
  done
}

# Copies FILE (symlinks resolved) to ROOTFS at DEST and records its package
# (PACKAGE when the caller knows it already).
packages_copied=()
install_file() {
  local file=$1 dest=$2 mode=$3 package=${4:-}
  install -D -m "$mode" "$(readlink -f "$file")" "$rootfs$dest"
  [[ -n $package ]] || package=$(owner "$file")
  [[ -z $package ]] || packages_copied+=("$package")
}

mkdir -p "$rootfs"
for binary in "${BINARIES[@]}"; do
  install -D -m 0755 "$out/bin/$binary" "$rootfs/usr/local/bin/$binary"
done
install_file "$(command -v tini)" /usr/bin/tini 0755

libraries=$(for binary in "${BINARIES[@]}"; do ldd "$out/bin/$binary"; done)
if grep -F "not found" <<<"$libraries"; then
  echo "runtime_rootfs: unresolved libraries (above)" >&2
  exit 1
fi
copied=0
kept=0
while read -r library; do
  package=$(owner "$library")
  if [[ -n $package ]] && grep -qxF "$package" "$base_packages"; then
    kept=$((kept + 1))
    continue
  fi
  dest=$library
  [[ $dest == /usr/* ]] || dest=/usr$dest
  install_file "$library" "$dest" 0644 "$package"
  copied=$((copied + 1))
done < <(sed -n 's/^.* => \(\/[^ ]*\) (0x[0-9a-f]*)$/\1/p' <<<"$libraries" | sort -u)

if [[ -f /usr/share/grpc/roots.pem ]]; then
  install_file /usr/share/grpc/roots.pem /usr/share/grpc/roots.pem 0644
fi
for package in $(printf '%s\n' "${packages_copied[@]}" | sort -u); do
  copyright=/usr/share/doc/$package/copyright
  [[ -f $copyright ]] && install -D -m 0644 "$copyright" "$rootfs$copyright"
done
echo "runtime_rootfs: $copied libraries copied, $kept from the base image;" \
  "$(du -sh "$rootfs" | cut -f1) in $rootfs"
