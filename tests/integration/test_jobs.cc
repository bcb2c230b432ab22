#include "tests/integration/test_jobs.h"

#include <filesystem>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/tensor.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/samples.h"
#include "core/util/status_macros.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd::testing {
namespace {

// Deterministic floats in [-1, 1) from an LCG, independent of the standard
// library's distributions.
std::vector<float> Pattern(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return v;
}

}  // namespace

v1::QuantizeRequest ConvJob(int64_t c, int64_t hw, int64_t m, int samples,
                            const std::string& request_id) {
  ConvSpec spec;
  spec.input_shape = {1, c, hw, hw};
  spec.weight = Tensor::FromVector<float>(Pattern(m * c * 9, 1), {m, c, 3, 3});
  spec.bias = Tensor::FromVector<float>(Pattern(m, 2), {m});
  spec.pads = {1, 1, 1, 1};
  v1::QuantizeRequest request;
  request.set_request_id(request_id);
  request.set_onnx_model(MakeConvModel(spec).SerializeAsString());
  request.mutable_tpc()->set_name("imx500@4.0");
  for (int i = 0; i < samples; ++i) {
    const std::vector<float> x = Pattern(c * hw * hw, 100 + i);
    v1::Tensor* t = request.add_calibration_samples()->add_inputs();
    t->set_name("x");
    t->set_data_type(v1::DATA_TYPE_FLOAT);
    for (int64_t d : {int64_t{1}, c, hw, hw}) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(x.data()),
                                x.size() * sizeof(float)));
  }
  return request;
}

std::string TwoConvModel(int64_t in_channels, int64_t hw, int64_t mid_channels,
                         int64_t out_channels) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, in_channels, hw, hw});
  b.FloatInitializer("w1", Pattern(mid_channels * in_channels * 9, 1),
                     {mid_channels, in_channels, 3, 3});
  b.FloatInitializer("w2", Pattern(out_channels * mid_channels * 9, 2),
                     {out_channels, mid_channels, 3, 3});
  b.AddNode("Conv", {"x", "w1"}, {"c1"}, "conv1").Ints("pads", {1, 1, 1, 1});
  b.AddNode("Relu", {"c1"}, {"r1"}, "relu1");
  b.AddNode("Conv", {"r1", "w2"}, {"y"}, "conv2").Ints("pads", {1, 1, 1, 1});
  b.Output("y", DType::kFloat);
  return b.Serialize();
}

v1::PruneRequest TwoConvPruneRequest(int64_t hw, int64_t channels) {
  v1::PruneRequest r;
  r.set_onnx_model(TwoConvModel(3, -1, channels, channels));
  r.mutable_tpc()->set_name("imx500@4.0");
  const std::vector<float> x = Pattern(3 * hw * hw, 7);
  v1::Tensor* t = r.add_calibration_samples()->add_inputs();
  t->set_name("x");
  t->set_data_type(v1::DATA_TYPE_FLOAT);
  for (int64_t d : {int64_t{1}, int64_t{3}, hw, hw}) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(x.data()),
                              x.size() * sizeof(float)));
  r.set_weights_memory_fraction(0.6);
  r.set_num_score_approximations(1);
  return r;
}

v1::QuantizeRequest SmallJob(const std::string& request_id) {
  return ConvJob(3, 8, 4, 4, request_id);
}

v1::QuantizeRequest LongJob(const std::string& request_id) {
  v1::QuantizeRequest request = ConvJob(4, 96, 64, 300, request_id);
  // The report evaluates on all 300 samples, not the default 16.
  request.set_report_samples(-1);
  return request;
}

absl::Status WriteJobFiles(const v1::QuantizeRequest& job,
                           const std::string& dir) {
  const std::filesystem::path root(dir);
  std::filesystem::create_directories(root / "calib");
  RETURN_IF_ERROR(
      WriteFileAtomically((root / "model.onnx").string(), job.onnx_model()));
  for (int i = 0; i < job.calibration_samples_size(); ++i) {
    std::map<std::string, Tensor> tensors;
    for (const v1::Tensor& input : job.calibration_samples(i).inputs()) {
      ASSIGN_OR_RETURN(
          tensors[input.name()],
          TensorFromSampleProto(input, "sample", int64_t{1} << 24));
    }
    RETURN_IF_ERROR(
        WriteSample((root / "calib").string(), absl::StrCat("s", i), tensors));
  }
  return absl::OkStatus();
}

}  // namespace quantd::testing
