#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the tools need.
# Idempotent: does nothing when everything is already installed.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git clang clang-format
  libclang-rt-14-dev lld-14
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler grpc-proto
  libabsl-dev libeigen3-dev prometheus-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libonnx-dev libonnx-testdata coinor-libcbc-dev
  python3 python3-dev pybind11-dev python3-grpcio python3-protobuf python3-numpy python3-onnx
  nlohmann-json3-dev yamllint python3-yaml shellcheck openssl
  fonts-dejavu-core chromium
)
# Node.js + npm run ONNX Runtime (npm's onnxruntime-node) for the oracle tests.
# Some images ship a Node.js whose package already contains npm (and conflicts
# with Debian's npm): only ask apt for them when they are absent.
command -v node >/dev/null 2>&1 || PACKAGES+=(nodejs)
command -v npm >/dev/null 2>&1 || PACKAGES+=(npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
