#include "tests/testing/example_model.h"

#include <cmath>
#include <string>

namespace quantd {
namespace {

// SplitMix64: a tiny fixed generator (identical on every platform).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  float Uniform() {
    return static_cast<float>((Next() >> 11) * (1.0 / 9007199254740992.0)) *
               2.0f -
           1.0f;
  }

 private:
  uint64_t s_;
};

Tensor Random(Rng& rng, std::vector<int64_t> shape, float scale,
              float offset = 0) {
  Tensor t(DType::kFloat, std::move(shape));
  for (float& v : t.mutable_span<float>()) v = offset + scale * rng.Uniform();
  return t;
}

Attribute Ints(std::vector<int64_t> v) {
  Attribute a;
  a.type = Attribute::Type::kInts;
  a.ints = std::move(v);
  return a;
}
Attribute Int(int64_t v) {
  Attribute a;
  a.type = Attribute::Type::kInt;
  a.i = v;
  return a;
}
Attribute Float(float v) {
  Attribute a;
  a.type = Attribute::Type::kFloat;
  a.f = v;
  return a;
}

Node MakeNode(std::string op, std::string name, std::vector<std::string> in,
              std::vector<std::string> out) {
  Node n;
  n.op_type = std::move(op);
  n.name = std::move(name);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

}  // namespace

Model MakeExampleCnn() {
  Rng rng(20240601);
  Model m;
  m.ir_version = 8;
  m.opset_import[""] = 13;
  m.producer_name = "quantd-example";
  Graph& g = m.graph;
  g.name = "example_cnn";
  ValueInfo in;
  in.name = "image";
  in.dtype = DType::kFloat;
  in.shape = {1, 3, 16, 16};
  in.dim_params = {"", "", "", ""};
  in.has_shape = true;
  g.inputs.push_back(in);
  ValueInfo out;
  out.name = "probs";
  out.dtype = DType::kFloat;
  out.shape = {1, 10};
  out.dim_params = {"", ""};
  out.has_shape = true;
  g.outputs.push_back(out);

  // He-style scales: sqrt(3 / fan_in) for a uniform [-a, a].
  g.initializers["conv1.w"] = Random(rng, {8, 3, 3, 3}, std::sqrt(6.0f / 27));
  g.initializers["conv1.b"] = Random(rng, {8}, 0.1f);
  g.initializers["bn1.scale"] = Random(rng, {8}, 0.2f, 1.0f);
  g.initializers["bn1.bias"] = Random(rng, {8}, 0.2f, 0.1f);
  g.initializers["bn1.mean"] = Random(rng, {8}, 0.1f);
  g.initializers["bn1.var"] = Random(rng, {8}, 0.3f, 1.0f);
  g.initializers["dw.w"] = Random(rng, {8, 1, 3, 3}, std::sqrt(6.0f / 9));
  g.initializers["dw.b"] = Random(rng, {8}, 0.1f);
  g.initializers["relu6.min"] = Tensor::FromVector<float>({0.0f}, {});
  g.initializers["relu6.max"] = Tensor::FromVector<float>({6.0f}, {});
  g.initializers["pw.w"] = Random(rng, {16, 8, 1, 1}, std::sqrt(6.0f / 8));
  g.initializers["pw.b"] = Random(rng, {16}, 0.1f);
  g.initializers["fc.w"] = Random(rng, {10, 16}, std::sqrt(6.0f / 16));
  g.initializers["fc.b"] = Random(rng, {10}, 0.1f);

  Node conv1 =
      MakeNode("Conv", "conv1", {"image", "conv1.w", "conv1.b"}, {"conv1_out"});
  conv1.attributes["pads"] = Ints({1, 1, 1, 1});
  conv1.attributes["kernel_shape"] = Ints({3, 3});
  g.nodes.push_back(conv1);
  Node bn =
      MakeNode("BatchNormalization", "bn1",
               {"conv1_out", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"},
               {"bn1_out"});
  bn.attributes["epsilon"] = Float(1e-5f);
  g.nodes.push_back(bn);
  g.nodes.push_back(MakeNode("Relu", "relu1", {"bn1_out"}, {"relu1_out"}));
  Node dw =
      MakeNode("Conv", "dwconv", {"relu1_out", "dw.w", "dw.b"}, {"dw_out"});
  dw.attributes["pads"] = Ints({1, 1, 1, 1});
  dw.attributes["kernel_shape"] = Ints({3, 3});
  dw.attributes["group"] = Int(8);
  g.nodes.push_back(dw);
  g.nodes.push_back(MakeNode(
      "Clip", "relu6", {"dw_out", "relu6.min", "relu6.max"}, {"relu6_out"}));
  Node pw =
      MakeNode("Conv", "pwconv", {"relu6_out", "pw.w", "pw.b"}, {"pw_out"});
  pw.attributes["kernel_shape"] = Ints({1, 1});
  g.nodes.push_back(pw);
  g.nodes.push_back(MakeNode("Relu", "relu2", {"pw_out"}, {"relu2_out"}));
  Node pool = MakeNode("MaxPool", "maxpool", {"relu2_out"}, {"pool_out"});
  pool.attributes["kernel_shape"] = Ints({2, 2});
  pool.attributes["strides"] = Ints({2, 2});
  g.nodes.push_back(pool);
  g.nodes.push_back(
      MakeNode("GlobalAveragePool", "gap", {"pool_out"}, {"gap_out"}));
  Node flat = MakeNode("Flatten", "flatten", {"gap_out"}, {"flat_out"});
  flat.attributes["axis"] = Int(1);
  g.nodes.push_back(flat);
  Node fc = MakeNode("Gemm", "fc", {"flat_out", "fc.w", "fc.b"}, {"logits"});
  fc.attributes["transB"] = Int(1);
  g.nodes.push_back(fc);
  Node softmax = MakeNode("Softmax", "softmax", {"logits"}, {"probs"});
  softmax.attributes["axis"] = Int(-1);
  g.nodes.push_back(softmax);
  return m;
}

std::vector<SampleFeeds> MakeExampleImages(int count, uint64_t seed) {
  Rng rng(seed);
  std::vector<SampleFeeds> out;
  for (int s = 0; s < count; ++s) {
    Tensor img(DType::kFloat, {1, 3, 16, 16});
    float* p = img.mutable_data<float>();
    const float gx = rng.Uniform(), gy = rng.Uniform();
    const float cx = 8 + 6 * rng.Uniform(), cy = 8 + 6 * rng.Uniform();
    const float radius = 3 + 2 * rng.Uniform();
    for (int c = 0; c < 3; ++c) {
      const float tint = rng.Uniform();
      for (int y = 0; y < 16; ++y) {
        for (int x = 0; x < 16; ++x) {
          const float d = std::hypot(x - cx, y - cy);
          float v = gx * (x - 7.5f) / 8 + gy * (y - 7.5f) / 8 +
                    (d < radius ? 1.5f * tint : 0.0f) + 0.2f * rng.Uniform();
          p[(c * 16 + y) * 16 + x] = v;
        }
      }
    }
    out.push_back({{"image", std::move(img)}});
  }
  return out;
}

}  // namespace quantd
