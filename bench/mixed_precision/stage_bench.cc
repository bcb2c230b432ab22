// Mixed-precision stage time (candidate parameter selection + sensitivity on
// the executor + CBC solve + refinement) as the number of layers grows:
// synthetic Conv+Relu chains of L layers (16 channels, 32x32, 8 images) and,
// when scripts/fetch_models.sh has run, the real CNNs (16 images). Each row
// prints the PTQ job without mixed precision next to the same job with
// `--mp weights=0.6` (the ratio is the MP overhead), in one process, so the
// machine load affects both alike. Args: [cache dir] (default .cache).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/registry.h"
#include "nlohmann/json.hpp"

namespace quantd {
namespace {

Model ConvChain(int layers) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random = [&](std::vector<int64_t> shape, float scale) {
    Tensor t(DType::kFloat, shape);
    for (float& v : t.mutable_span<float>()) v = scale * normal(rng);
    return t;
  };
  Model m;
  m.ir_version = 8;
  m.opset_import[""] = 13;
  Graph& g = m.graph;
  g.name = absl::StrCat("chain", layers);
  g.inputs.push_back(
      {"x", DType::kFloat, {1, 16, 32, 32}, {"", "", "", ""}, true});
  std::string prev = "x";
  for (int l = 0; l < layers; ++l) {
    const std::string w = absl::StrCat("w", l), b = absl::StrCat("b", l);
    g.initializers[w] = random({16, 16, 3, 3}, std::sqrt(2.0f / 144));
    g.initializers[b] = random({16}, 0.05f);
    Node conv;
    conv.name = absl::StrCat("conv", l);
    conv.op_type = "Conv";
    conv.inputs = {prev, w, b};
    conv.outputs = {absl::StrCat("c", l)};
    Attribute pads;
    pads.type = Attribute::Type::kInts;
    pads.ints = {1, 1, 1, 1};
    conv.attributes["pads"] = pads;
    g.nodes.push_back(conv);
    Node relu;
    relu.name = absl::StrCat("relu", l);
    relu.op_type = "Relu";
    relu.inputs = {conv.outputs[0]};
    relu.outputs = {absl::StrCat("r", l)};
    g.nodes.push_back(relu);
    prev = relu.outputs[0];
  }
  g.outputs.push_back(
      {prev, DType::kFloat, {1, 16, 32, 32}, {"", "", "", ""}, true});
  return m;
}

struct Timing {
  double job_seconds = 0;
  double mp_seconds = 0;
  int layers = 0;
  std::string error;
};

Timing RunJob(const v1::QuantizeRequest& r, const tpc::TpcRegistry& registry,
              ThreadPool* pool) {
  Timing t;
  JobContext ctx;
  ctx.registry = &registry;
  ctx.pool = pool;
  const auto start = std::chrono::steady_clock::now();
  auto result = RunQuantizeJob(r, ctx);
  t.job_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!result.ok()) {
    t.error = std::string(result.status().message());
    return t;
  }
  auto report = nlohmann::json::parse(result->report_json());
  if (report.contains("timings_seconds")) {
    for (auto& [stage, s] : report["timings_seconds"].items()) {
      if (stage == "mixed_precision") t.mp_seconds = s.get<double>();
    }
  }
  for (const auto& n : result->quantized_graph().nodes()) {
    t.layers += n.candidate_sensitivity_size() > 0;
  }
  return t;
}

void Row(const std::string& name, v1::QuantizeRequest r,
         const tpc::TpcRegistry& registry, ThreadPool* pool) {
  const Timing ptq = RunJob(r, registry, pool);
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_weights_memory_bytes(0.6);
  r.mutable_mixed_precision()->set_num_of_images(r.calibration_samples_size());
  const Timing mp = RunJob(r, registry, pool);
  if (!ptq.error.empty() || !mp.error.empty()) {
    std::printf("%-16s error: %s%s\n", name.c_str(), ptq.error.c_str(),
                mp.error.c_str());
    return;
  }
  std::printf("%-16s %6d %6d %10.2f %10.2f %10.2f %7.2f\n", name.c_str(),
              mp.layers, r.calibration_samples_size(), ptq.job_seconds,
              mp.job_seconds, mp.mp_seconds, mp.job_seconds / ptq.job_seconds);
  std::fflush(stdout);
}

}  // namespace
}  // namespace quantd

int main(int argc, char** argv) {
  using namespace quantd;
  const std::string cache = argc > 1 ? argv[1] : ".cache";
  tpc::TpcRegistry registry;
  if (!registry.AddBuiltins().ok()) return 1;
  ThreadPool pool(2);
  std::printf("%-16s %6s %6s %10s %10s %10s %7s\n", "model", "layers", "images",
              "ptq_s", "ptq+mp_s", "mp_stage_s", "ratio");
  for (int layers : {4, 8, 16, 32}) {
    v1::QuantizeRequest r;
    r.set_onnx_model(*ExportOnnx(ConvChain(layers)));
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int s = 0; s < 8; ++s) {
      Tensor x(DType::kFloat, {1, 16, 32, 32});
      for (float& v : x.mutable_span<float>()) v = normal(rng);
      *r.add_calibration_samples()->add_inputs() = TensorToSampleProto(x, "x");
    }
    r.mutable_tpc()->set_name("imx500@4.1");
    Row(absl::StrCat("chain", layers), r, registry, &pool);
  }
  for (const char* name : {"ppocr_cls", "oww_embedding", "ppocr_det"}) {
    auto bytes = ReadFileLimited(absl::StrCat(cache, "/models/", name, ".onnx"),
                                 int64_t{1} << 30);
    if (!bytes.ok()) continue;
    auto model = ImportOnnx(*bytes);
    if (!model.ok()) continue;
    std::vector<std::string> inputs;
    for (const auto& in : model->graph.inputs) inputs.push_back(in.name);
    auto calib =
        ReadSampleSet(absl::StrCat(cache, "/samples/", name, "/calib"), inputs);
    if (!calib.ok()) continue;
    v1::QuantizeRequest r;
    r.set_onnx_model(*bytes);
    for (size_t s = 0; s < calib->samples.size() && s < 16; ++s) {
      v1::Sample* p = r.add_calibration_samples();
      for (const auto& [in, t] : calib->samples[s]) {
        *p->add_inputs() = TensorToSampleProto(t, in);
      }
    }
    r.mutable_tpc()->set_name("imx500@4.1");
    Row(name, r, registry, &pool);
  }
  return 0;
}
