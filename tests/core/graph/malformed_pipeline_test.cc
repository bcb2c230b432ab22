// Untrusted models must never crash anything in core/graph: mutants of a
// model that exercises many ops go through import, shape inference, every
// transform, opset upgrade and export. Each step may fail, with a message.
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/graph/opset_upgrade.h"
#include "core/graph/pattern_matcher.h"
#include "core/graph/shape_inference.h"
#include "core/graph/transforms.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

onnx::ModelProto RichModel() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 2, 6, 6});
  b.Initializer("w", Tensor::FromVector<float>(std::vector<float>(36, 0.1f),
                                               {4, 1, 3, 3}));
  b.AddNode("Conv", {"x", "w"}, {"c"}, "conv")
      .Int("group", 2)
      .Ints("pads", {1, 1, 1, 1})
      .Ints("strides", {1, 1});
  b.FloatInitializer("g", {1, 2, 3, 4}, {4});
  b.FloatInitializer("be", {0, 0, 0, 0}, {4});
  b.FloatInitializer("mu", {0, 1, 0, 1}, {4});
  b.FloatInitializer("va", {1, 1, 1, 1}, {4});
  b.AddNode("BatchNormalization", {"c", "g", "be", "mu", "va"}, {"bn"}, "bn");
  b.AddNode("Relu", {"bn"}, {"r"}, "relu");
  b.AddNode("MaxPool", {"r"}, {"p"}, "pool")
      .Ints("kernel_shape", {2, 2})
      .Ints("strides", {2, 2})
      .Int("ceil_mode", 1);
  b.Int64Initializer("pads", {0, 0, 1, 1, 0, 0, 1, 1}, {8});
  b.AddNode("Pad", {"p", "pads"}, {"pd"}, "pad");
  b.AddNode("Shape", {"pd"}, {"s"}, "shape");
  b.Int64Initializer("idx", {0}, {1});
  b.AddNode("Gather", {"s", "idx"}, {"n"}, "gather");
  b.Int64Initializer("rest", {-1}, {1});
  b.AddNode("Concat", {"n", "rest"}, {"shp"}, "concat").Int("axis", 0);
  b.AddNode("Reshape", {"pd", "shp"}, {"flat"}, "reshape");
  b.Int64Initializer("st", {0}, {1});
  b.Int64Initializer("en", {10}, {1});
  b.Int64Initializer("ax", {1}, {1});
  b.AddNode("Slice", {"flat", "st", "en", "ax"}, {"sl"}, "slice");
  b.Int64Initializer("rep", {2, 1}, {2});
  b.AddNode("Tile", {"sl", "rep"}, {"t"}, "tile");
  b.Initializer(
      "fw", Tensor::FromVector<float>(std::vector<float>(30, 0.2f), {3, 10}));
  b.AddNode("Gemm", {"t", "fw"}, {"gm"}, "gemm").Int("transB", 1);
  b.AddNode("Softmax", {"gm"}, {"sm"}, "softmax").Int("axis", -1);
  b.AddNode("Identity", {"sm"}, {"y"}, "id");
  b.Output("y", DType::kFloat);
  return b.Build();
}

void RunEverything(const std::string& bytes) {
  absl::StatusOr<Model> m = ImportOnnx(bytes);
  if (!m.ok()) {
    EXPECT_FALSE(m.status().message().empty());
    return;
  }
  Model copy = *m;
  absl::StatusOr<ShapeInferenceResult> r = InferShapes(&copy);
  if (!r.ok()) EXPECT_FALSE(r.status().message().empty());
  Model t = *m;
  (void)FoldConstants(&t);
  (void)RemoveIdentities(&t);
  (void)FoldBatchNorms(&t);
  (void)FoldBatchNormsForward(&t);
  (void)MatchPatterns(t.graph, {{"cr", {OpTypeIs("Conv"), OpTypeIs("Relu")}}});
  Model u = *m;
  (void)UpgradeOpset(&u, 21);
  (void)InferShapes(&u);
  (void)ExportOnnx(t);
  (void)ExportOnnx(u);
}

TEST(MalformedPipeline, ByteMutantsNeverCrash) {
  const std::string bytes = RichModel().SerializeAsString();
  RunEverything(bytes);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 1500; ++trial) {
    std::string mutated = bytes;
    for (int k = 0; k <= trial % 3; ++k) {
      mutated[rng() % mutated.size()] ^= static_cast<char>(1 + rng() % 255);
    }
    RunEverything(mutated);
  }
}

TEST(MalformedPipeline, ExtremeAttributeAndInitializerValuesNeverCrash) {
  const onnx::ModelProto base = RichModel();
  const std::vector<int64_t> extremes = {std::numeric_limits<int64_t>::max(),
                                         std::numeric_limits<int64_t>::min(),
                                         -1,
                                         0,
                                         1,
                                         (int64_t{1} << 40) + 1,
                                         int64_t{1} << 62,
                                         -(int64_t{1} << 62)};
  std::mt19937 rng(11);
  for (int trial = 0; trial < 3000; ++trial) {
    onnx::ModelProto proto = base;
    auto* graph = proto.mutable_graph();
    const int64_t v = extremes[rng() % extremes.size()];
    if (rng() % 2 == 0) {
      auto* node = graph->mutable_node(rng() % graph->node_size());
      if (node->attribute_size() == 0) continue;
      auto* attr = node->mutable_attribute(rng() % node->attribute_size());
      if (attr->ints_size() > 0) {
        attr->set_ints(rng() % attr->ints_size(), v);
      } else {
        attr->set_i(v);
      }
    } else {
      auto* init =
          graph->mutable_initializer(rng() % graph->initializer_size());
      if (init->data_type() == onnx::TensorProto::INT64) {
        std::string raw = init->raw_data();
        const size_t k = (rng() % (raw.size() / 8)) * 8;
        std::memcpy(raw.data() + k, &v, 8);
        init->set_raw_data(raw);
      } else if (init->dims_size() > 0) {
        init->set_dims(rng() % init->dims_size(), v);
      }
    }
    RunEverything(proto.SerializeAsString());
  }
}

}  // namespace
}  // namespace quantd
