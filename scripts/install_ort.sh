#!/usr/bin/env bash
# Installs ONNX Runtime for Node (onnxruntime-node, CPU EP, pinned in
# tools/ort/package.json + package-lock.json) into tools/ort/node_modules.
# ORT is quantd's independent oracle: tools/ort/run_model.js runs models with it.
#
# Idempotent and offline-safe: when the pinned version is already installed it
# returns at once without touching the network. --ignore-scripts skips the
# package's postinstall, which would try to download CUDA binaries.
# Prints the absolute path of tools/ort on stdout (for callers that capture it).
set -euo pipefail
ORT_DIR="$(cd "$(dirname "$0")/../tools/ort" && pwd)"
WANT="$(node -p "require('$ORT_DIR/package.json').dependencies['onnxruntime-node']")"

installed_version() {
  node -p "require('$ORT_DIR/node_modules/onnxruntime-node/package.json').version" 2>/dev/null || true
}

binding_present() {
  compgen -G "$ORT_DIR/node_modules/onnxruntime-node/bin/napi-v*/linux/x64/libonnxruntime.so*" >/dev/null
}

# opentype.js renders the text of the text models' sample images.
fonts_renderer_present() { [[ -f "$ORT_DIR/node_modules/opentype.js/package.json" ]]; }

if [[ "$(installed_version)" == "$WANT" ]] && binding_present && fonts_renderer_present; then
  echo "$ORT_DIR"
  exit 0
fi

command -v npm >/dev/null || { echo "install_ort: npm not found (scripts/setup.sh installs it)" >&2; exit 1; }
echo "install_ort: installing onnxruntime-node@$WANT into $ORT_DIR/node_modules" >&2
# A lock held by a parallel caller (ctest fixtures, several build dirs) is
# serialised with flock so two npm processes never write the same tree.
exec 9>"${TMPDIR:-/tmp}/quantd-install-ort.lock"
flock 9
if [[ "$(installed_version)" != "$WANT" ]] || ! binding_present || ! fonts_renderer_present; then
  (cd "$ORT_DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
fi
if ! binding_present; then
  echo "install_ort: onnxruntime-node installed but libonnxruntime.so for linux-x64 is missing" >&2
  exit 1
fi
node -e "require('$ORT_DIR/node_modules/onnxruntime-node')" >&2
echo "$ORT_DIR"
