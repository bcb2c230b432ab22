// Imports every ONNX backend node test model shipped by Debian's
// libonnx-testdata. Each must import or fail with a clear error; the
// failures are listed with their reasons, never hidden.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "core/graph/onnx_import.h"
#include "gtest/gtest.h"
#include "tests/core/graph/graph_test_util.h"

namespace quantd {
namespace {

namespace fs = std::filesystem;

using graph_test::kOnnxNodeTestDir;

std::vector<fs::path> NodeCases() {
  std::vector<fs::path> cases;
  if (!fs::exists(kOnnxNodeTestDir)) return cases;
  for (const auto& entry : fs::directory_iterator(kOnnxNodeTestDir)) {
    if (fs::exists(entry.path() / "model.onnx")) cases.push_back(entry.path());
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

TEST(OnnxTestdataImport, EveryNodeModelImportsOrFailsClearly) {
  const std::vector<fs::path> cases = NodeCases();
  if (cases.empty()) GTEST_SKIP() << "libonnx-testdata is not installed";
  int ok = 0;
  std::vector<std::string> failures;
  for (const fs::path& dir : cases) {
    absl::StatusOr<Model> model = ImportOnnxFile(dir / "model.onnx");
    if (model.ok()) {
      ++ok;
      continue;
    }
    EXPECT_FALSE(model.status().message().empty()) << dir;
    failures.push_back(dir.filename().string() + ": " +
                       std::string(model.status().message()));
  }
  std::cout << "imported " << ok << " of " << cases.size()
            << " node models; failures:\n";
  for (const std::string& f : failures) std::cout << "  " << f << "\n";
  // 932 cases in 1.12; the rejected ones use opsets < 7, sequences,
  // optionals, non-default domains or local functions.
  EXPECT_EQ(cases.size(), 932u);
  EXPECT_GE(ok, 800);
}

}  // namespace
}  // namespace quantd
