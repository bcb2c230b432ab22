// QDQ structure: what BuildQdqModel inserts, checked against ONNX Runtime's
// QDQ fusion rules (onnx-reference §1.8/§5.3) on a hand-built Conv -> Relu.
#include "core/qdq/qdq_export.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/qdq/qdq_math.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

using ::testing::ElementsAre;

Model ConvReluModel() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 1, 3, 3});
  // Two output channels, 1x1 kernels: w = [0.5, -0.25].
  b.FloatInitializer("w", {0.5f, -0.25f}, {2, 1, 1, 1});
  b.FloatInitializer("b", {0.1f, -0.2f}, {2});
  b.AddNode("Conv", {"x", "w", "b"}, {"c"}, "conv");
  b.AddNode("Relu", {"c"}, {"y"}, "relu");
  b.Output("y", DType::kFloat);
  auto model = ImportOnnxModel(b.Build());
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

QdqPlan ConvReluPlan() {
  QdqPlan plan;
  // x: unsigned 8-bit, T = 1 -> scale 1/256, zp 0.
  plan.activations.push_back({"x", *StorageForBits(8, false), 1.0f / 256, 0});
  // y: unsigned 8-bit, T = 2 -> scale 2/256.
  plan.activations.push_back({"y", *StorageForBits(8, false), 2.0f / 256, 0});
  QdqWeight w;
  w.node = "conv";
  w.input_index = 1;
  w.storage = *StorageForBits(8, true);
  w.axis = 0;
  // Per-channel T = 0.5 and 0.25 -> scales 0.5/128, 0.25/128:
  // 0.5 / (0.5/128) = 128 saturates to 127; -0.25 / (0.25/128) = -128.
  w.scales = {0.5f / 128, 0.25f / 128};
  w.int_values = Tensor::FromVector<int32_t>({127, -128}, {2, 1, 1, 1});
  plan.weights.push_back(w);
  QdqWeight bias;
  bias.node = "conv";
  bias.input_index = 2;
  bias.storage = {DType::kInt32, DTypeMin(DType::kInt32),
                  DTypeMax(DType::kInt32)};
  bias.axis = 0;
  QuantizedBias qb = QuantizeBias({0.1f, -0.2f}, 1.0f / 256, w.scales);
  bias.scales = qb.scales;
  bias.int_values =
      Tensor::FromVector<int32_t>({qb.values[0], qb.values[1]}, {2});
  plan.weights.push_back(bias);
  return plan;
}

std::vector<std::string> OpTypes(const Model& m) {
  std::vector<std::string> ops;
  for (const Node& n : m.graph.nodes) ops.push_back(n.op_type);
  return ops;
}

const Node* Producer(const Model& m, const std::string& tensor) {
  for (const Node& n : m.graph.nodes) {
    for (const auto& o : n.outputs) {
      if (o == tensor) return &n;
    }
  }
  return nullptr;
}

TEST(QdqExport, ConvReluGetsQdqAroundTheFusedPair) {
  auto qdq = BuildQdqModel(ConvReluModel(), ConvReluPlan());
  ASSERT_TRUE(qdq.ok()) << qdq.status();
  // Input Q/DQ, weight DQ, bias DQ, Conv, Relu (no Q between: ORT's Conv
  // selector absorbs the Relu), output Q/DQ.
  EXPECT_THAT(OpTypes(*qdq),
              ElementsAre("QuantizeLinear", "DequantizeLinear",
                          "DequantizeLinear", "DequantizeLinear", "Conv",
                          "Relu", "QuantizeLinear", "DequantizeLinear"));
}

TEST(QdqExport, WeightsAreInt8PerChannelWithZeroZeroPoint) {
  auto qdq = BuildQdqModel(ConvReluModel(), ConvReluPlan());
  ASSERT_TRUE(qdq.ok()) << qdq.status();
  const Node* conv = Producer(*qdq, "c");
  ASSERT_NE(conv, nullptr);
  const Node* wdq = Producer(*qdq, conv->inputs[1]);
  ASSERT_NE(wdq, nullptr);
  EXPECT_EQ(wdq->op_type, "DequantizeLinear");
  EXPECT_EQ(wdq->GetInt("axis", -1), 0);
  const Tensor* q = qdq->graph.FindInitializer(wdq->inputs[0]);
  ASSERT_NE(q, nullptr);
  ASSERT_EQ(q->dtype(), DType::kInt8);
  EXPECT_THAT(q->span<int8_t>(), ElementsAre(127, -128));
  const Tensor* zp = qdq->graph.FindInitializer(wdq->inputs[2]);
  ASSERT_NE(zp, nullptr);
  EXPECT_EQ(zp->dtype(), DType::kInt8);
  EXPECT_THAT(zp->span<int8_t>(), ElementsAre(0, 0));
  // The float weight is gone.
  EXPECT_EQ(qdq->graph.FindInitializer("w"), nullptr);
}

TEST(QdqExport, BiasIsInt32WithProductScaleAndNoZeroPoint) {
  auto qdq = BuildQdqModel(ConvReluModel(), ConvReluPlan());
  ASSERT_TRUE(qdq.ok()) << qdq.status();
  const Node* conv = Producer(*qdq, "c");
  const Node* bdq = Producer(*qdq, conv->inputs[2]);
  ASSERT_NE(bdq, nullptr);
  ASSERT_EQ(bdq->inputs.size(), 2u);
  const Tensor* q = qdq->graph.FindInitializer(bdq->inputs[0]);
  const Tensor* s = qdq->graph.FindInitializer(bdq->inputs[1]);
  ASSERT_EQ(q->dtype(), DType::kInt32);
  // scale0 = (1/256)(0.5/128) = 2^-16 -> 0.1 * 65536 = 6553.6 -> 6554;
  // scale1 = (1/256)(0.25/128) = 2^-17 -> -0.2 * 131072 = -26214.4 -> -26214.
  EXPECT_THAT(s->span<float>(), ElementsAre(1.0f / 65536, 1.0f / 131072));
  EXPECT_THAT(q->span<int32_t>(), ElementsAre(6554, -26214));
}

TEST(QdqExport, QuantizedGraphOutputKeepsItsName) {
  auto qdq = BuildQdqModel(ConvReluModel(), ConvReluPlan());
  ASSERT_TRUE(qdq.ok()) << qdq.status();
  ASSERT_EQ(qdq->graph.outputs.size(), 1u);
  EXPECT_EQ(qdq->graph.outputs[0].name, "y");
  const Node* last = Producer(*qdq, "y");
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->op_type, "DequantizeLinear");
  // The Relu (target node) no longer produces a graph output.
  const Node* relu = nullptr;
  for (const Node& n : qdq->graph.nodes) {
    if (n.op_type == "Relu") relu = &n;
  }
  ASSERT_NE(relu, nullptr);
  EXPECT_NE(relu->outputs[0], "y");
}

TEST(QdqExport, EachDequantizeFeedsExactlyOneNode) {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 4});
  b.AddNode("Relu", {"x"}, {"r"}, "relu");
  b.AddNode("Sigmoid", {"r"}, {"s1"}, "sig");
  b.AddNode("Tanh", {"r"}, {"s2"}, "tanh");
  b.AddNode("Add", {"s1", "s2"}, {"y"}, "add");
  b.Output("y", DType::kFloat);
  auto model = ImportOnnxModel(b.Build());
  ASSERT_TRUE(model.ok()) << model.status();
  QdqPlan plan;
  plan.activations.push_back({"r", *StorageForBits(8, false), 0.1f, 0});
  auto qdq = BuildQdqModel(*model, plan);
  ASSERT_TRUE(qdq.ok()) << qdq.status();
  std::map<std::string, int> uses;
  for (const Node& n : qdq->graph.nodes) {
    for (const auto& in : n.inputs) uses[in]++;
  }
  int dqs = 0;
  for (const Node& n : qdq->graph.nodes) {
    if (n.op_type != "DequantizeLinear") continue;
    ++dqs;
    EXPECT_EQ(uses[n.outputs[0]], 1) << n.name;
  }
  EXPECT_EQ(dqs, 2);  // one per consumer (Sigmoid, Tanh)
}

// The weight integers, whatever their dtype, are stored in the storage type
// unchanged; one that does not fit is an error naming its value and
// element.
TEST(QdqExport, WeightIntegersAreNarrowedOrRejectedNamingTheElement) {
  const std::vector<int64_t> shape = {2, 1, 1, 1};
  for (const Tensor& given : {Tensor::FromVector<int32_t>({127, -128}, shape),
                              Tensor::FromVector<int64_t>({127, -128}, shape),
                              Tensor::FromVector<int16_t>({127, -128}, shape),
                              Tensor::FromVector<int8_t>({127, -128}, shape)}) {
    QdqPlan plan = ConvReluPlan();
    plan.weights[0].int_values = given;
    auto qdq = BuildQdqModel(ConvReluModel(), plan);
    ASSERT_TRUE(qdq.ok()) << DTypeName(given.dtype()) << ": " << qdq.status();
    const Node* wdq = Producer(*qdq, Producer(*qdq, "c")->inputs[1]);
    const Tensor* stored = qdq->graph.FindInitializer(wdq->inputs[0]);
    ASSERT_NE(stored, nullptr);
    ASSERT_EQ(stored->dtype(), DType::kInt8);
    EXPECT_THAT(stored->span<int8_t>(), ElementsAre(127, -128));
  }
  QdqPlan plan = ConvReluPlan();
  plan.weights[0].int_values =
      Tensor::FromVector<int32_t>({127, -129}, {2, 1, 1, 1});
  auto qdq = BuildQdqModel(ConvReluModel(), plan);
  ASSERT_EQ(qdq.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(qdq.status().message()),
              ::testing::HasSubstr("value -129 at element 1 does not fit"));
}

TEST(QdqExport, FourBitWeightsNeedOpset21) {
  QdqPlan plan = ConvReluPlan();
  plan.weights[0].storage = *StorageForBits(4, true);
  plan.weights[0].int_values =
      Tensor::FromVector<int32_t>({7, -8}, {2, 1, 1, 1});
  EXPECT_EQ(RequiredQdqOpset(plan), 21);
  auto qdq = BuildQdqModel(ConvReluModel(), plan);
  EXPECT_EQ(qdq.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(QdqExport, FourBitWeightsArePackedInt4AtOpset21) {
  Model model = ConvReluModel();
  model.opset_import[""] = 21;
  QdqPlan plan = ConvReluPlan();
  plan.weights[0].storage = *StorageForBits(4, true);
  plan.weights[0].int_values =
      Tensor::FromVector<int32_t>({7, -8}, {2, 1, 1, 1});
  auto qdq = BuildQdqModel(model, plan);
  ASSERT_TRUE(qdq.ok()) << qdq.status();
  EXPECT_GE(qdq->ir_version, 10);
  const Node* conv = Producer(*qdq, "c");
  const Node* wdq = Producer(*qdq, conv->inputs[1]);
  auto it = qdq->graph.sub_byte_types.find(wdq->inputs[0]);
  ASSERT_NE(it, qdq->graph.sub_byte_types.end());
  EXPECT_EQ(it->second, DType::kInt4);
  // Round trip through ONNX bytes keeps the int4 values.
  auto bytes = ExportOnnx(*qdq);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto back = ImportOnnx(*bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  const Tensor* q = back->graph.FindInitializer(wdq->inputs[0]);
  ASSERT_NE(q, nullptr);
  EXPECT_THAT(q->span<int8_t>(), ElementsAre(7, -8));
}

TEST(QdqExport, LutWeightsBecomeIndicesCastGatherMul) {
  QdqPlan plan = ConvReluPlan();
  plan.weights.resize(1);
  QdqWeight& w = plan.weights[0];
  w.codebook = {-1.0f, 0.0f,
                0.5f};  // centers -128, 0, 64 on the int8 grid / 2^7
  w.int_values = Tensor::FromVector<int32_t>({2, 0}, {2, 1, 1, 1});
  w.scales = {1.0f, 0.5f};
  auto qdq = BuildQdqModel(ConvReluModel(), plan);
  ASSERT_TRUE(qdq.ok()) << qdq.status();
  const Node* conv = Producer(*qdq, "c");
  const Node* mul = Producer(*qdq, conv->inputs[1]);
  ASSERT_EQ(mul->op_type, "Mul");
  const Node* gather = Producer(*qdq, mul->inputs[0]);
  ASSERT_EQ(gather->op_type, "Gather");
  const Node* cast = Producer(*qdq, gather->inputs[1]);
  ASSERT_EQ(cast->op_type, "Cast");
  const Tensor* idx = qdq->graph.FindInitializer(cast->inputs[0]);
  EXPECT_THAT(idx->span<uint8_t>(), ElementsAre(2, 0));
  const Tensor* scale = qdq->graph.FindInitializer(mul->inputs[1]);
  EXPECT_THAT(scale->shape(), ElementsAre(2, 1, 1, 1));
}

TEST(QdqExport, UnknownTensorIsNamedInTheError) {
  QdqPlan plan;
  plan.activations.push_back({"nope", *StorageForBits(8, false), 0.1f, 0});
  auto qdq = BuildQdqModel(ConvReluModel(), plan);
  EXPECT_EQ(qdq.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(qdq.status().message()),
              ::testing::HasSubstr("'nope'"));
}

TEST(QdqExport, WeightValueOutsideStorageIsRejected) {
  QdqPlan plan = ConvReluPlan();
  plan.weights[0].int_values =
      Tensor::FromVector<int32_t>({200, 0}, {2, 1, 1, 1});
  auto qdq = BuildQdqModel(ConvReluModel(), plan);
  EXPECT_EQ(qdq.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(qdq.status().message()),
              ::testing::HasSubstr("node 'conv' (Conv)"));
}

TEST(QdqMath, QuantizeRoundsHalfToEvenAndSaturates) {
  // scale 1: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2; 300 saturates to 255, -1 to 0.
  EXPECT_EQ(QuantizeValue(0.5f, 1.0f, 0, 0, 255), 0);
  EXPECT_EQ(QuantizeValue(1.5f, 1.0f, 0, 0, 255), 2);
  EXPECT_EQ(QuantizeValue(2.5f, 1.0f, 0, 0, 255), 2);
  EXPECT_EQ(QuantizeValue(300.0f, 1.0f, 0, 0, 255), 255);
  EXPECT_EQ(QuantizeValue(-1.0f, 1.0f, 0, 0, 255), 0);
  EXPECT_EQ(QuantizeValue(1e30f, 1e-30f, 0, -128, 127), 127);
}

// The AVX2 fake quant against the portable body, bit for bit, on ties,
// values past both ends of the grid, +-0, NaN, infinities, a zero scale
// (x / 0) and every length mod 8, for 4-, 8- and 16-bit grids with zero
// points. Hand check: scale 0.5, int8 zp 3: -0.2 -> round(-0.4) = -0.0 ->
// +0.0; 1.25 -> round(2.5) = 2 -> 1.0; 100 -> clamp(200, -131, 124) -> 62.
TEST(QdqMath, FakeQuantizeVectorBodyEqualsScalarBitForBit) {
  const QdqStorage int8 = *StorageForBits(8, true);
  std::vector<float> hand = {-0.2f, 1.25f,  100.0f, -0.2f,
                             1.25f, 100.0f, -0.2f,  1.25f};
  FakeQuantizeInPlace(absl::MakeSpan(hand), 0.5f, 3, int8);
  EXPECT_EQ(std::signbit(hand[0]), false);
  EXPECT_EQ(hand[0], 0.0f);
  EXPECT_EQ(hand[1], 1.0f);
  EXPECT_EQ(hand[2], 62.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.25f, -0.25f, 0.75f, -1.25f, 1e30f, -1e30f,
                            -0.0f, 0.0f,   nan,   inf,    -inf};
  uint32_t state = 12345;
  for (int trial = 0; trial < 120; ++trial) {
    const QdqStorage storage = *StorageForBits(
        trial % 3 == 0 ? 4 : (trial % 3 == 1 ? 8 : 16), trial % 2 == 0);
    const int64_t zp = trial % 4 == 0 ? 0 : (storage.qmin + storage.qmax) / 2;
    const float scale = trial % 17 == 0 ? 0.0f : 0.01f * (1 + trial % 13);
    std::vector<float> x(1 + trial % 41);
    for (float& v : x) {
      state = state * 1664525u + 1013904223u;
      v = (static_cast<float>(state >> 8) / (1 << 24) - 0.5f) * 4.0f;
      if ((state & 7) == 0) v = specials[(state >> 3) % 11];
    }
    std::vector<float> want = x;
    FakeQuantizeInPlaceScalar(absl::MakeSpan(want), scale, zp, storage);
    FakeQuantizeInPlace(absl::MakeSpan(x), scale, zp, storage);
    ASSERT_EQ(std::memcmp(x.data(), want.data(), x.size() * sizeof(float)), 0)
        << "trial " << trial;
  }
}

TEST(QdqMath, StorageForBitsMatchesTheGrid) {
  // 4-bit signed: [-8, 7] in int4; 6-bit unsigned: [0, 63] in uint8 (clipped).
  auto s4 = *StorageForBits(4, true);
  EXPECT_EQ(s4.dtype, DType::kInt4);
  EXPECT_EQ(s4.qmin, -8);
  EXPECT_EQ(s4.qmax, 7);
  auto s6 = *StorageForBits(6, false);
  EXPECT_EQ(s6.dtype, DType::kUint8);
  EXPECT_EQ(s6.qmax, 63);
  EXPECT_TRUE(NeedsClip(s6));
  EXPECT_FALSE(StorageForBits(32, true).ok());
}

}  // namespace
}  // namespace quantd
