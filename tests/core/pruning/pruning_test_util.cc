#include "tests/core/pruning/pruning_test_util.h"

#include <random>

#include "core/pipeline/job/samples.h"
#include "core/tpc/builtins.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd::pruning_test {
namespace {

void SetSimd(v1::QuantizationConfigOptions* qco, int simd) {
  auto edit = [simd](v1::OpQuantizationConfig* c) {
    if (simd > 0) {
      c->set_simd_size(simd);
    } else {
      c->clear_simd_size();
    }
  };
  edit(qco->mutable_base_config());
  for (auto& c : *qco->mutable_quantization_configurations()) edit(&c);
}

std::vector<float> Random(int64_t n, std::mt19937* rng) {
  std::normal_distribution<float> d(0.f, 0.5f);
  std::vector<float> v(n);
  for (float& x : v) x = d(*rng);
  return v;
}

}  // namespace

v1::TargetPlatformCapabilities TpcWithSimd(int simd) {
  v1::TargetPlatformCapabilities tpc = tpc::BuiltinTpcs()[0].tpc;
  SetSimd(tpc.mutable_default_qco(), simd);
  for (auto& set : *tpc.mutable_operator_set()) {
    if (set.has_qc_options()) SetSimd(set.mutable_qc_options(), simd);
  }
  return tpc;
}

std::string DeadChannelModel() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2, 4, 4});
  b.FloatInitializer("w1", {1, 2, 0, 0, -1, 0.5f, 0, 0}, {4, 2, 1, 1});
  b.FloatInitializer("b1", {0.1f, 0, 0.2f, 0}, {4});
  b.FloatInitializer("w2", {0.5f, 3, -0.25f, 7, 1, -2, 0.75f, -5, -1, 4, 2, 9},
                     {3, 4, 1, 1});
  b.FloatInitializer("b2", {0.01f, -0.02f, 0.03f}, {3});
  b.AddNode("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1");
  b.AddNode("Relu", {"c1"}, {"r1"}, "relu1");
  b.AddNode("Conv", {"r1", "w2", "b2"}, {"y"}, "conv2");
  b.Output("y", DType::kFloat);
  return b.Serialize();
}

std::string ChainModel() {
  std::mt19937 rng(7);
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 3, 6, 6});
  b.FloatInitializer("w1", Random(8 * 3 * 9, &rng), {8, 3, 3, 3});
  b.FloatInitializer("b1", Random(8, &rng), {8});
  b.FloatInitializer("bn_scale", Random(8, &rng), {8});
  b.FloatInitializer("bn_bias", Random(8, &rng), {8});
  b.FloatInitializer("bn_mean", Random(8, &rng), {8});
  std::vector<float> var = Random(8, &rng);
  for (float& v : var) v = v * v + 0.5f;
  b.FloatInitializer("bn_var", var, {8});
  b.FloatInitializer("w2", Random(8 * 8, &rng), {8, 8, 1, 1});
  b.FloatInitializer("b2", Random(8, &rng), {8});
  b.FloatInitializer("scale", Random(8, &rng), {8, 1, 1});
  b.FloatInitializer("w3", Random(4 * 8, &rng), {4, 8, 1, 1});
  b.FloatInitializer("g1", Random(4 * 16, &rng), {4, 16});
  b.FloatInitializer("g1b", Random(16, &rng), {16});
  b.FloatInitializer("g2", Random(5 * 16, &rng), {5, 16});
  b.FloatInitializer("g2b", Random(5, &rng), {5});
  b.AddNode("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1")
      .Ints("pads", {1, 1, 1, 1});
  b.AddNode("BatchNormalization",
            {"c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"}, {"n1"}, "bn1");
  b.AddNode("Relu", {"n1"}, {"r1"}, "relu1");
  b.AddNode("Conv", {"r1", "w2", "b2"}, {"c2"}, "conv2");
  b.AddNode("Mul", {"c2", "scale"}, {"m2"}, "mul2");
  b.AddNode("Relu", {"m2"}, {"r2"}, "relu2");
  b.AddNode("Conv", {"r2", "w3"}, {"c3"}, "conv3");
  b.AddNode("GlobalAveragePool", {"c3"}, {"p3"}, "pool");
  b.AddNode("Flatten", {"p3"}, {"f3"}, "flatten");
  b.AddNode("Gemm", {"f3", "g1", "g1b"}, {"h1"}, "gemm1");
  b.AddNode("Relu", {"h1"}, {"hr"}, "relu3");
  b.AddNode("Gemm", {"hr", "g2", "g2b"}, {"y"}, "gemm2").Int("transB", 1);
  b.Output("y", DType::kFloat);
  return b.Serialize();
}

std::vector<v1::Sample> RandomSamples(const std::string& name,
                                      const std::vector<int64_t>& shape,
                                      int count, uint64_t seed) {
  std::mt19937 rng(seed);
  std::vector<v1::Sample> out;
  for (int i = 0; i < count; ++i) {
    const std::vector<float> v = Random(NumElements(shape), &rng);
    v1::Sample s;
    *s.add_inputs() = TensorToSampleProto(Tensor::FromVector(v, shape), name);
    out.push_back(std::move(s));
  }
  return out;
}

v1::PruneRequest MakeRequest(const std::string& model, int simd,
                             const std::vector<v1::Sample>& samples) {
  v1::PruneRequest r;
  r.set_onnx_model(model);
  *r.mutable_tpc()->mutable_inline_tpc() = TpcWithSimd(simd);
  for (const v1::Sample& s : samples) *r.add_calibration_samples() = s;
  return r;
}

}  // namespace quantd::pruning_test
