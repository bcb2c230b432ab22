// Shape inference against ONNX's backend node tests: for every case, bind the
// graph inputs to the shapes of test_data_set_0/input_*.pb, forget the
// declared output shapes, infer, and compare with output_*.pb. Cases whose
// ops have no shape rule are listed, not hidden.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/onnx_import.h"
#include "core/graph/shape_inference.h"
#include "gtest/gtest.h"
#include "tests/core/graph/graph_test_util.h"

namespace quantd {
namespace {

namespace fs = std::filesystem;

using graph_test::kOnnxNodeTestDir;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> Files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int i = 0;; ++i) {
    fs::path p = dir / absl::StrCat(prefix, i, ".pb");
    if (!fs::exists(p)) break;
    files.push_back(p);
  }
  return files;
}

// Ops whose output sizes depend on input values (or, for Loop, on how many
// iterations run): their unknown dims are the right static answer, as long as
// every dim that is inferred agrees.
const std::set<std::string> kDataDependentOps = {"NonZero", "NonMaxSuppression",
                                                 "Compress", "Unique", "Loop"};

// One case: "" when inference agrees, else what differs.
std::string CheckCase(const fs::path& dir, bool* unsupported) {
  absl::StatusOr<Model> model = ImportOnnxFile(dir / "model.onnx");
  if (!model.ok()) {
    *unsupported = true;
    return absl::StrCat("import: ", model.status().message());
  }
  bool data_dependent = false;
  for (const Node& node : model->graph.nodes) {
    data_dependent |= kDataDependentOps.count(node.op_type) > 0;
  }
  const fs::path data = dir / "test_data_set_0";
  ShapeInferenceOptions options;
  std::vector<fs::path> inputs = Files(data, "input_");
  for (size_t i = 0; i < inputs.size() && i < model->graph.inputs.size(); ++i) {
    absl::StatusOr<Tensor> t = ImportTensorProto(ReadFile(inputs[i]));
    if (!t.ok()) {
      *unsupported = true;
      return absl::StrCat("input ", i, ": ", t.status().message());
    }
    options.input_shapes[model->graph.inputs[i].name] = t->shape();
    // Integer inputs of these tests are shapes, axes, sizes; tiny float
    // vectors are Resize scales or Range bounds: fixed values that real
    // models carry as constants.
    if (t->dtype() == DType::kInt64 || t->dtype() == DType::kInt32 ||
        (t->rank() <= 1 && t->num_elements() <= 8)) {
      options.input_values[model->graph.inputs[i].name] = *t;
    }
  }
  absl::Status bound = BindInputShapes(options.input_shapes, &model->graph);
  if (!bound.ok()) {
    // A few 1.12 cases feed inputs whose rank contradicts the model.
    *unsupported = true;
    return absl::StrCat("test data contradicts the model: ", bound.message());
  }
  options.input_shapes.clear();
  for (ValueInfo& out : model->graph.outputs) {
    out.has_shape = false;
    out.shape.clear();
    out.dim_params.clear();
    out.dtype = DType::kUndefined;
  }
  model->graph.value_info.clear();
  absl::StatusOr<ShapeInferenceResult> r = InferShapes(&*model, options);
  if (!r.ok()) return absl::StrCat("error: ", r.status().message());
  if (!r->unsupported.empty()) {
    *unsupported = true;
    return absl::StrCat("no rule: ", absl::StrJoin(r->unsupported, ", "));
  }
  std::vector<fs::path> outputs = Files(data, "output_");
  for (size_t i = 0; i < outputs.size() && i < model->graph.outputs.size();
       ++i) {
    absl::StatusOr<Tensor> want = ImportTensorProto(ReadFile(outputs[i]));
    if (!want.ok()) {
      *unsupported = true;
      return absl::StrCat("output ", i, ": ", want.status().message());
    }
    const ValueInfo& got = model->graph.outputs[i];
    // The 1.12 data stores bfloat16 outputs as uint16.
    const bool same_type =
        got.dtype == want->dtype() ||
        (got.dtype == DType::kBfloat16 && want->dtype() == DType::kUint16);
    if (got.has_shape && data_dependent && same_type &&
        got.shape.size() == want->shape().size()) {
      bool agrees = true;
      for (size_t d = 0; d < got.shape.size(); ++d) {
        agrees &= got.shape[d] < 0 || got.shape[d] == want->shape()[d];
      }
      if (agrees) continue;
    }
    if (!got.has_shape) {
      *unsupported = true;
      return absl::StrCat("output '", got.name, "': rank not inferred");
    }
    if (got.shape != want->shape() || !same_type) {
      return absl::StrCat("output '", got.name, "': inferred ",
                          DTypeName(got.dtype), "[",
                          got.has_shape ? absl::StrJoin(got.shape, ",") : "?",
                          "], expected ", want->DebugString());
    }
  }
  return "";
}

TEST(ShapeInferenceTestdata, AgreesWithExpectedOutputShapes) {
  if (!fs::exists(kOnnxNodeTestDir))
    GTEST_SKIP() << "libonnx-testdata not installed";
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(kOnnxNodeTestDir)) {
    cases.push_back(e.path());
  }
  std::sort(cases.begin(), cases.end());
  int pass = 0;
  std::vector<std::string> unsupported, failed;
  for (const fs::path& dir : cases) {
    bool is_unsupported = false;
    const std::string msg = CheckCase(dir, &is_unsupported);
    const std::string name = dir.filename().string();
    if (msg.empty()) {
      ++pass;
    } else if (is_unsupported) {
      unsupported.push_back(name + ": " + msg);
    } else {
      failed.push_back(name + ": " + msg);
    }
  }
  std::cout << "shape inference: " << pass << " of " << cases.size()
            << " node cases agree; " << unsupported.size() << " unsupported, "
            << failed.size() << " disagree\n";
  for (const auto& u : unsupported) std::cout << "  unsupported " << u << "\n";
  for (const auto& f : failed) std::cout << "  FAILED " << f << "\n";
  EXPECT_TRUE(failed.empty()) << failed.size() << " supported cases disagree";
  // 846 at the time of writing; a drop means a rule regressed.
  EXPECT_GE(pass, 846);
}

}  // namespace
}  // namespace quantd
