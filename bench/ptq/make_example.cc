// make_ptq_example DIR: writes the bundled example for scripts/demo.sh —
// DIR/example_cnn.onnx, DIR/calib/ (32 images) and DIR/eval/ (16 held-out
// images) in the sample-set layout. Deterministic (fixed seeds).
#include <cstdio>
#include <string>

#include "absl/strings/str_format.h"
#include "core/graph/onnx_export.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "tests/testing/example_model.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  auto bytes = quantd::ExportOnnx(quantd::MakeExampleCnn());
  if (!bytes.ok()) {
    std::fprintf(stderr, "%s\n", bytes.status().ToString().c_str());
    return 1;
  }
  absl::Status st =
      quantd::WriteFileAtomically(dir + "/example_cnn.onnx", *bytes);
  const struct {
    const char* folder;
    int count;
    uint64_t seed;
  } sets[] = {{"calib", 32, 1}, {"eval", 16, 2}};
  for (const auto& set : sets) {
    auto images = quantd::MakeExampleImages(set.count, set.seed);
    for (size_t i = 0; i < images.size() && st.ok(); ++i) {
      st = quantd::WriteSample(dir + "/" + set.folder,
                               absl::StrFormat("s%03d", i), images[i]);
    }
  }
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("wrote %s/example_cnn.onnx, calib/ (32), eval/ (16)\n",
              dir.c_str());
  return 0;
}
