// mct_quantizers' custom ops (domain "mct_quantizers") against values derived
// by hand from mct_quantizers 1.5.2's torch forward functions.
#include <map>
#include <string>
#include <vector>

#include "core/executor/executor.h"
#include "core/graph/mctq_ops.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/executor/test_util.h"

namespace quantd {
namespace {

using ::quantd::testing::F;
using ::quantd::testing::Float;
using ::quantd::testing::Int;
using ::quantd::testing::String;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// One mct_quantizers op on input "x" with constant parameter inputs.
absl::StatusOr<std::vector<float>> RunMctq(
    const std::string& op, const Tensor& x, std::vector<Tensor> params,
    std::map<std::string, Attribute> attrs) {
  Model m;
  m.opset_import[""] = 15;
  m.opset_import[std::string(kMctqDomain)] = 1;
  ValueInfo in;
  in.name = "x";
  in.dtype = DType::kFloat;
  m.graph.inputs.push_back(in);
  Node n;
  n.name = "q";
  n.op_type = op;
  n.domain = std::string(kMctqDomain);
  n.inputs = {"x"};
  for (size_t k = 0; k < params.size(); ++k) {
    const std::string name = absl::StrCat("p", k);
    m.graph.initializers[name] = params[k];
    n.inputs.push_back(name);
  }
  n.outputs = {"y"};
  attrs["mctq_version"] = String("1.5.2");
  n.attributes = std::move(attrs);
  m.graph.nodes.push_back(n);
  ValueInfo out;
  out.name = "y";
  m.graph.outputs.push_back(out);
  auto e = Executor::Create(std::move(m));
  if (!e.ok()) return e.status();
  auto r = (*e)->Run({{"x", x}});
  if (!r.ok()) return r.status();
  return testing::Values(r->at("y"));
}

TEST(MctqKernelsTest, ActivationPotUnsignedClipsAndRoundsHalfToEven) {
  // T=8, 8 bit unsigned -> step 1/32, range [0, 8-1/32]; 1/64 and 3/64 are
  // ties (0.5 and 1.5 steps) -> 0 and 2 steps.
  auto y = RunMctq(
      "ActivationPOTQuantizer", F({-1, 0.015625f, 0.046875f, 7.99f, 100}, {5}),
      {}, {{"threshold", Float(8)}, {"signed", Int(0)}, {"num_bits", Int(8)}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(*y, ElementsAreArray({0.0f, 0.0f, 0.0625f, 7.96875f, 7.96875f}));
}

TEST(MctqKernelsTest, ActivationPotSixteenBitSigned) {
  // T=8, 16 bit signed -> step 2^-12, range [-8, 8-2^-12].
  auto y = RunMctq(
      "ActivationPOTQuantizer", F({-9, 9, 0.000122f}, {3}), {},
      {{"threshold", Float(8)}, {"signed", Int(1)}, {"num_bits", Int(16)}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(*y, ElementsAreArray({-8.0f, 8.0f - 1.0f / 4096, 0.0f}));
}

TEST(MctqKernelsTest, ActivationPotRejectsAThresholdThatIsNotAPowerOfTwo) {
  auto y = RunMctq(
      "ActivationPOTQuantizer", F({1}, {1}), {},
      {{"threshold", Float(3)}, {"signed", Int(1)}, {"num_bits", Int(8)}});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(), HasSubstr("power of two"));
}

TEST(MctqKernelsTest, ActivationSymmetricSigned) {
  // T=3, 2 bit signed -> step 1.5, range [-3, 1.5].
  auto y = RunMctq(
      "ActivationSymmetricQuantizer", F({-4, -0.75f, 0.8f, 2}, {4}), {},
      {{"threshold", Float(3)}, {"signed", Int(1)}, {"num_bits", Int(2)}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(*y, ElementsAreArray({-3.0f, -0.0f, 1.5f, 1.5f}));
}

TEST(MctqKernelsTest, ActivationUniformMovesTheRangeToHoldZero) {
  // [-1, 2], 2 bit: step 1, grid {-1, 0, 1, 2}. Rounding is on the index
  // (x - a) / step: 0.5 is index 1.5, a tie that goes to index 2 -> 1.
  auto y =
      RunMctq("ActivationUniformQuantizer", F({-5, 0.5f, 1.4f, 9}, {4}), {},
              {{"min_range", Float(-1)},
               {"max_range", Float(2)},
               {"num_bits", Int(2)}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(*y, ElementsAreArray({-1.0f, 1.0f, 1.0f, 2.0f}));
}

TEST(MctqKernelsTest, WeightsSymmetricPerChannelAlongAxisZero) {
  // Channel 0: T=1, 8 bit -> step 1/128, hi 127/128; channel 1: T=2.
  auto y =
      RunMctq("WeightsSymmetricQuantizer",
              F({2, -2, 0.01171875f, 3, -3, 0.5f}, {2, 3}), {F({1, 2}, {2})},
              {{"num_bits", Int(8)},
               {"per_channel", Int(1)},
               {"channel_axis", Int(0)},
               {"signed", Int(1)}});
  ASSERT_TRUE(y.ok()) << y.status();
  // 0.01171875 = 1.5 steps -> 2 steps = 0.015625.
  EXPECT_THAT(*y, ElementsAreArray({127.0f / 128, -1.0f, 0.015625f,
                                    2 - 1.0f / 64, -2.0f, 0.5f}));
}

TEST(MctqKernelsTest, WeightsPerChannelCountMustMatchTheAxis) {
  auto y = RunMctq("WeightsPOTQuantizer", F({1, 2, 3}, {3}), {F({1, 2}, {2})},
                   {{"num_bits", Int(8)},
                    {"per_channel", Int(1)},
                    {"channel_axis", Int(0)},
                    {"signed", Int(1)}});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(), HasSubstr("per-channel parameters"));
}

TEST(MctqKernelsTest, WeightsUniformPerTensor) {
  // [-1, 2], 2 bit: step 1; round(x / 1) * 1 after clipping.
  auto y = RunMctq("WeightsUniformQuantizer", F({-3, 0.5f, 1.6f, 7}, {4}),
                   {F({-1}, {1}), F({2}, {1})},
                   {{"num_bits", Int(2)},
                    {"per_channel", Int(0)},
                    {"channel_axis", Int(0)},
                    {"signed", Int(1)}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(*y, ElementsAreArray({-1.0f, 0.0f, 2.0f, 2.0f}));
}

TEST(MctqKernelsTest, WeightsLutPicksTheNearestCentroid) {
  // T=1: v = w * 128 clipped to [-128, 127]; lut {-128, 0, 64}:
  // 0.1 -> 12.8 -> 0; 0.3 -> 38.4 -> 64 (0.5); -2 -> -128 (-1); 0.25 -> 32,
  // a tie between 0 and 64 -> the first, 0.
  auto y =
      RunMctq("WeightsLUTSymmetricQuantizer", F({0.1f, 0.3f, -2, 0.25f}, {4}),
              {F({-128, 0, 64}, {3}), F({1}, {1})},
              {{"num_bits", Int(2)},
               {"per_channel", Int(0)},
               {"channel_axis", Int(0)},
               {"input_rank", Int(4)},
               {"lut_values_bitwidth", Int(8)},
               {"eps", Float(1e-8f)},
               {"signed", Int(1)}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(*y, ElementsAreArray({0.0f, 0.5f, -1.0f, 0.0f}));
}

TEST(MctqKernelsTest, OtherOpsOfTheDomainAreRejected) {
  auto y = RunMctq("ActivationLUTPOTQuantizer", F({1}, {1}), {},
                   {{"num_bits", Int(8)}});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(), HasSubstr("mct_quantizers"));
}

TEST(MctqKernelsTest, MissingAttributeNamesIt) {
  auto y = RunMctq("ActivationPOTQuantizer", F({1}, {1}), {},
                   {{"threshold", Float(1)}, {"signed", Int(1)}});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(), HasSubstr("num_bits"));
}

}  // namespace
}  // namespace quantd
