// The mixed-precision resource calculator on hand-built graphs, against
// hand-computed figures (derivations in the comments).
#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/pipeline/mixed_precision/mixed_precision_resources.h"
#include "core/pipeline/mixed_precision/resource_utilization.h"
#include "gtest/gtest.h"

namespace quantd {
namespace {

Node MakeNode(const std::string& name, const std::string& op,
              std::vector<std::string> inputs,
              std::vector<std::string> outputs) {
  Node n;
  n.name = name;
  n.op_type = op;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

// x -> A -> a;  a -> B -> b;  a -> C -> c;  Add(b, c) -> d (graph output).
// Elements: x 10, a 20, b 30, c 40, d 50.
struct Diamond {
  Model model;
  std::map<std::string, std::vector<int64_t>> shapes = {
      {"x", {10}}, {"a", {20}}, {"b", {30}}, {"c", {40}}, {"d", {50}}};
  Diamond() {
    Graph& g = model.graph;
    g.inputs.push_back({"x", DType::kFloat, {10}, {""}, true});
    g.outputs.push_back({"d", DType::kFloat, {50}, {""}, true});
    g.nodes.push_back(MakeNode("A", "Relu", {"x"}, {"a"}));
    g.nodes.push_back(MakeNode("B", "Relu", {"a"}, {"b"}));
    g.nodes.push_back(MakeNode("C", "Relu", {"a"}, {"c"}));
    g.nodes.push_back(MakeNode("D", "Add", {"b", "c"}, {"d"}));
  }
};

ResourceBits AllBits(const ResourceLayout& l, int bits) {
  ResourceBits b;
  b.activation_bits.assign(l.activations.size(), bits);
  b.weight_bits.assign(l.weights.size(), bits);
  b.weight_simd.assign(l.weights.size(), 0);
  return b;
}

TEST(ResourceCalculatorTest, ActivationMemoryIsTheLargestLiveCut) {
  Diamond d;
  ResourceLayout l =
      BuildResourceLayout(d.model, d.shapes, {"x", "a", "b", "c", "d"}, {});
  // Cuts along A, B, C, D (8-bit: bytes = elements):
  //   A: {x, a} = 30   B: {a, b} = 50   C: {a, b, c} = 90
  //   D: {b, c, d} = 120 (a died after C, its last consumer).
  // {a, b} lies inside {a, b, c} and is dropped: 3 cuts remain.
  EXPECT_EQ(l.cuts.size(), 3u);
  ResourceBreakdown r = EvaluateResources(l, AllBits(l, 8));
  EXPECT_DOUBLE_EQ(r.activation, 120);
  EXPECT_DOUBLE_EQ(r.weights, 0);
  EXPECT_DOUBLE_EQ(r.total, 120);
}

TEST(ResourceCalculatorTest, LowerBitsOfOneTensorChangeEveryCutHoldingIt) {
  Diamond d;
  ResourceLayout l =
      BuildResourceLayout(d.model, d.shapes, {"x", "a", "b", "c", "d"}, {});
  ResourceBits b = AllBits(l, 8);
  for (size_t i = 0; i < l.activations.size(); ++i) {
    if (l.activations[i].tensor == "d") b.activation_bits[i] = 2;
  }
  // d at 2 bits: cut D = 30 + 40 + 50/4 = 82.5 < cut C = 90.
  ResourceBreakdown r = EvaluateResources(l, b);
  EXPECT_DOUBLE_EQ(r.activation, 90);
}

TEST(ResourceCalculatorTest, FloatTensorsAreNotCounted) {
  Diamond d;
  // Only b and d quantized: cut D = 30 + 50 = 80, cut C = 30.
  ResourceLayout l = BuildResourceLayout(d.model, d.shapes, {"b", "d"}, {});
  EXPECT_DOUBLE_EQ(EvaluateResources(l, AllBits(l, 8)).activation, 80);
}

// x [1,2,5,5] -> Conv(W [4,2,3,3], pads 1) -> y [1,4,5,5] -> Flatten -> f
// [1,100] -> Gemm(W2 [100,10]) -> z [1,10].
struct ConvGemm {
  Model model;
  std::map<std::string, std::vector<int64_t>> shapes = {{"x", {1, 2, 5, 5}},
                                                        {"y", {1, 4, 5, 5}},
                                                        {"f", {1, 100}},
                                                        {"z", {1, 10}}};
  ConvGemm() {
    Graph& g = model.graph;
    g.inputs.push_back(
        {"x", DType::kFloat, {1, 2, 5, 5}, {"", "", "", ""}, true});
    g.outputs.push_back({"z", DType::kFloat, {1, 10}, {"", ""}, true});
    g.initializers["W"] = Tensor(DType::kFloat, {4, 2, 3, 3});
    g.initializers["W2"] = Tensor(DType::kFloat, {100, 10});
    g.nodes.push_back(MakeNode("conv", "Conv", {"x", "W"}, {"y"}));
    g.nodes.push_back(MakeNode("flat", "Flatten", {"y"}, {"f"}));
    g.nodes.push_back(MakeNode("fc", "Gemm", {"f", "W2"}, {"z"}));
  }
};

TEST(ResourceCalculatorTest, WeightsMemoryIsParamsTimesBitsOverEight) {
  ConvGemm m;
  ResourceLayout l =
      BuildResourceLayout(m.model, m.shapes, {}, {{0, 1, 0}, {2, 1, -1}});
  ASSERT_EQ(l.weights.size(), 2u);
  ResourceBits b = AllBits(l, 8);
  b.weight_bits = {4, 2};
  // Conv: 4*2*3*3 = 72 params * 4 bits / 8 = 36 bytes;
  // Gemm: 100*10 = 1000 params * 2 bits / 8 = 250 bytes.
  EXPECT_DOUBLE_EQ(EvaluateResources(l, b).weights, 286);
}

TEST(ResourceCalculatorTest, SimdPaddingRoundsOutputChannelsUp) {
  ConvGemm m;
  ResourceLayout l = BuildResourceLayout(m.model, m.shapes, {}, {{0, 1, 0}});
  ResourceBits b = AllBits(l, 8);
  b.weight_simd = {32};
  // 4 output channels padded to 32, 18 params each: 576 params at 8 bits.
  EXPECT_DOUBLE_EQ(EvaluateResources(l, b).weights, 576);
  b.weight_simd = {3};
  // 4 channels padded to 6: 108 params.
  EXPECT_DOUBLE_EQ(EvaluateResources(l, b).weights, 108);
}

TEST(ResourceCalculatorTest, BopsAreMacsTimesWeightAndInputBits) {
  ConvGemm m;
  ResourceLayout l = BuildResourceLayout(m.model, m.shapes, {"x", "y", "f"},
                                         {{0, 1, 0}, {2, 1, -1}});
  ResourceBits b = AllBits(l, 8);
  b.weight_bits = {4, 8};
  b.activation_bits = {8, 8, 2};  // x, y, f
  // Conv: 100 outputs * 18 MACs = 1800 MACs * 4 (w) * 8 (x) = 57600.
  // Gemm: 10 outputs * 100 MACs = 1000 MACs * 8 (w) * 2 (f) = 16000.
  EXPECT_DOUBLE_EQ(EvaluateResources(l, b).bops, 73600);
}

TEST(ResourceCalculatorTest, FloatOperandsCountThirtyTwoBitsInBops) {
  ConvGemm m;
  // Nothing quantized: 1800 * 32 * 32 + 1000 * 32 * 32.
  ResourceLayout l = BuildResourceLayout(m.model, m.shapes, {}, {});
  EXPECT_DOUBLE_EQ(EvaluateResources(l, AllBits(l, 8)).bops, 2800.0 * 32 * 32);
}

TEST(ResourceCalculatorTest, TotalIsWeightsPlusTheLargestCut) {
  ConvGemm m;
  ResourceLayout l = BuildResourceLayout(m.model, m.shapes, {"x", "y", "f"},
                                         {{0, 1, 0}, {2, 1, -1}});
  // Cuts: conv {x, y} = 50 + 100 = 150; flat {y, f} = 200; fc {f} (z
  // float) = 100, inside {y, f}. Weights 72 + 1000 = 1072 (8-bit).
  ResourceBreakdown r = EvaluateResources(l, AllBits(l, 8));
  EXPECT_DOUBLE_EQ(r.activation, 200);
  EXPECT_DOUBLE_EQ(r.total, 1272);
}

TEST(ResourceCalculatorTest, OnlyExceededTargetsAreWarnedAbout) {
  mixed_precision::ResourceFigures achieved, targets;
  achieved.weights_memory_bytes = 100;
  achieved.activation_memory_bytes = 80;
  achieved.total_memory_bytes = 180;
  targets.weights_memory_bytes = 100;    // met exactly
  targets.activation_memory_bytes = 64;  // exceeded
  // total: no target
  const auto w = TargetOverrunWarnings(achieved, targets);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("activation memory 80 exceeds the target 64"),
            std::string::npos)
      << w[0];
}

}  // namespace
}  // namespace quantd
