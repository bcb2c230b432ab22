// Opset upgrades must not change what a model computes: every ONNX node test
// at opsets 7..12 is upgraded to 13 and to 21, and ONNX Runtime runs the
// original and the upgraded model on the test's inputs (ort_compare.js).
// Skipped when node or onnxruntime-node is missing (scripts/install_ort.sh).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/graph/opset_upgrade.h"
#include "gtest/gtest.h"
#include "tests/core/graph/graph_test_util.h"

namespace quantd {
namespace {

namespace fs = std::filesystem;

using graph_test::SourceDir;

std::string Json(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

TEST(UpgradeOpsetOrt, NodeTestsComputeTheSameAfterUpgrade) {
  const fs::path node_dir = "/usr/share/libonnx-testdata/data/node";
  if (!fs::exists(node_dir) ||
      !fs::exists(SourceDir() / "tools/ort/node_modules/onnxruntime-node") ||
      std::system("node --version > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs libonnx-testdata, node and onnxruntime-node";
  }
  const fs::path tmp =
      fs::temp_directory_path() / absl::StrCat("graph_upgrade_ort_", getpid());
  fs::create_directories(tmp);
  const fs::path manifest = tmp / "manifest.jsonl";
  std::ofstream list(manifest);
  int cases = 0;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(node_dir))
    dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& dir : dirs) {
    absl::StatusOr<Model> m = ImportOnnxFile((dir / "model.onnx").string());
    if (!m.ok() || m->DefaultOpset() >= 13) continue;
    std::vector<std::string> inputs;
    for (int i = 0;; ++i) {
      fs::path p = dir / "test_data_set_0" / absl::StrCat("input_", i, ".pb");
      if (!fs::exists(p)) break;
      inputs.push_back(p.string());
    }
    std::vector<std::string> expected;
    for (int i = 0;; ++i) {
      fs::path p = dir / "test_data_set_0" / absl::StrCat("output_", i, ".pb");
      if (!fs::exists(p)) break;
      expected.push_back(p.string());
    }
    for (int64_t target : {13, 21}) {
      Model up = *m;
      absl::Status s = UpgradeOpset(&up, target);
      if (!s.ok()) {
        // Only ops without a newer form may refuse (Scan-8).
        EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
        std::cout << "  not upgradable: " << s.message() << "\n";
        continue;
      }
      absl::StatusOr<std::string> bytes = ExportOnnx(up);
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      const std::string name =
          absl::StrCat(dir.filename().string(), "@", target);
      const fs::path out = tmp / (name + ".onnx");
      std::ofstream(out, std::ios::binary) << *bytes;
      list << "{\"name\": " << Json(name)
           << ", \"a\": " << Json((dir / "model.onnx").string())
           << ", \"b\": " << Json(out.string()) << ", \"inputs\": [";
      for (size_t i = 0; i < inputs.size(); ++i) {
        list << (i ? ", " : "") << Json(inputs[i]);
      }
      list << "], \"expected\": [";
      for (size_t i = 0; i < expected.size(); ++i) {
        list << (i ? ", " : "") << Json(expected[i]);
      }
      list << "]}\n";
      ++cases;
    }
  }
  list.close();
  const fs::path result = tmp / "result.txt";
  const std::string cmd = absl::StrCat(
      "node '", (SourceDir() / "tests/core/graph/ort_compare.js").string(),
      "' '", manifest.string(), "' > '", result.string(), "' 2>&1");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "see " << result;
  std::ifstream in(result);
  std::string line;
  int ok = 0, skipped = 0;
  std::vector<std::string> failures;
  while (std::getline(in, line)) {
    if (line.rfind("ok ", 0) == 0) ++ok;
    if (line.rfind("ok-expected ", 0) == 0) {
      ++ok;
      std::cout << "  " << line << "\n";
    }
    if (line.rfind("skip ", 0) == 0) {
      ++skipped;
      std::cout << "  " << line << "\n";
    }
    if (line.rfind("FAIL ", 0) == 0) failures.push_back(line);
  }
  std::cout << "opset upgrade under ONNX Runtime: " << ok << " of " << cases
            << " upgraded models compute the same, " << skipped
            << " skipped (ORT cannot run the original), " << failures.size()
            << " differ\n";
  for (const std::string& f : failures) std::cout << "  " << f << "\n";
  EXPECT_TRUE(failures.empty());
  EXPECT_GT(ok, 200);
  if (failures.empty()) fs::remove_all(tmp);  // else kept for inspection
}

}  // namespace
}  // namespace quantd
