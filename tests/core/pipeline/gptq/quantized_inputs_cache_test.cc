// GPTQ's cache of quantized inputs: a block's input computed from the
// cached tensors equals, bit for bit, the same input computed from the
// graph inputs (the executor on a residual graph with a multi-output node,
// as the stage uses it), and the cache keeps only what later nodes read,
// within its budget, for every sample.
#include "core/pipeline/gptq/quantized_inputs_cache.h"

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/executor/executor.h"
#include "core/graph/onnx_import.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"

namespace quantd {
namespace {

Tensor RandomTensor(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t(DType::kFloat, std::move(shape));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0, 1);
  for (float& v : t.mutable_span<float>()) v = d(rng);
  return t;
}

// x -> conv1 (3x3) -> c1 -> Relu -> r1 -> conv2 (1x1) -> c2 -> Add(c2, r1)
// -> a -> Split -> s0, s1; conv3 (1x1) reads s0 -> c3; Add(c3, s1) -> y;
// conv4 (1x1) reads y -> z. Kernels in node order: conv1, conv2, conv3,
// conv4.
Model ResidualModel() {
  OnnxModelBuilder b(13);
  b.Input("x", DType::kFloat, {1, 4, 6, 6});
  b.Initializer("w1", RandomTensor({8, 4, 3, 3}, 1));
  b.Initializer("w2", RandomTensor({8, 8, 1, 1}, 2));
  b.Initializer("w3", RandomTensor({4, 4, 1, 1}, 3));
  b.Initializer("w4", RandomTensor({2, 4, 1, 1}, 4));
  b.AddNode("Conv", {"x", "w1"}, {"c1"}, "conv1").Ints("pads", {1, 1, 1, 1});
  b.AddNode("Relu", {"c1"}, {"r1"}, "relu1");
  b.AddNode("Conv", {"r1", "w2"}, {"c2"}, "conv2");
  b.AddNode("Add", {"c2", "r1"}, {"a"}, "add1");
  b.AddNode("Split", {"a"}, {"s0", "s1"}, "split").Int("axis", 1);
  b.AddNode("Conv", {"s0", "w3"}, {"c3"}, "conv3");
  b.AddNode("Add", {"c3", "s1"}, {"y"}, "add2");
  b.AddNode("Conv", {"y", "w4"}, {"z"}, "conv4");
  b.Output("z", DType::kFloat);
  auto m = ImportOnnxModel(b.Build());
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : Model();
}

int NodeIndex(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// `tensor` from a run of `model` cut by KeepOnlyWhatProduces at `cached`
// (fed from `feeds`), and what the run computed that `worth` accepts.
Tensor RunCut(const Model& model, const std::string& tensor,
              const std::map<std::string, Tensor>& cached_values,
              const std::map<std::string, Tensor>& inputs,
              const std::function<bool(const std::string&)>& worth,
              std::map<std::string, Tensor>* computed, size_t* nodes_run) {
  std::map<std::string, DType> cached;
  for (const auto& [name, t] : cached_values) cached[name] = t.dtype();
  Model cut = model;
  EXPECT_TRUE(KeepOnlyWhatProduces(tensor, cached, &cut.graph));
  *nodes_run = cut.graph.nodes.size();
  auto it = cached_values.find(tensor);
  if (it != cached_values.end()) return it->second;
  auto in = inputs.find(tensor);  // a graph input: nothing runs
  if (in != inputs.end()) return in->second;
  auto exec = Executor::Create(std::make_shared<const Model>(cut));
  EXPECT_TRUE(exec.ok()) << exec.status();
  std::map<std::string, Tensor> feeds = inputs;
  for (const ValueInfo& in : cut.graph.inputs) {
    auto c = cached_values.find(in.name);
    if (c != cached_values.end()) feeds[in.name] = c->second;
  }
  Tensor value;
  TensorObserver observer = [&](const Node& node, int k, const Tensor& v) {
    if (node.outputs[k] == tensor) value = v.Clone();
    if (computed != nullptr && worth(node.outputs[k])) {
      (*computed)[node.outputs[k]] = v.Clone();
    }
  };
  RunOptions run;
  run.observer = &observer;
  auto out = (*exec)->Run(feeds, run);
  EXPECT_TRUE(out.ok()) << out.status();
  return value;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

TEST(QuantizedInputsCache, CutRunsGiveTheWholeRunsBits) {
  const Model model = ResidualModel();
  const Graph& g = model.graph;
  const std::vector<std::string> kernels = {"conv1", "conv2", "conv3", "conv4"};
  const size_t samples = 3;
  std::vector<std::map<std::string, Tensor>> inputs(samples);
  for (size_t s = 0; s < samples; ++s) {
    inputs[s]["x"] = RandomTensor({1, 4, 6, 6}, 10 + s);
  }
  QuantizedInputsCache cache(g, samples);
  std::vector<size_t> nodes_with_cache;
  for (const std::string& kernel : kernels) {
    const int k = NodeIndex(g, kernel);
    ASSERT_GE(k, 0);
    const std::string input = g.nodes[k].inputs[0];
    std::vector<std::map<std::string, Tensor>> computed(samples);
    size_t with_cache = 0;
    for (size_t s = 0; s < samples; ++s) {
      std::map<std::string, Tensor> cached;
      for (const std::string& name : cache.names()) {
        cached[name] = cache.Get(s, name);
      }
      size_t ignored = 0;
      const Tensor whole =
          RunCut(model, input, {}, inputs[s], nullptr, nullptr, &ignored);
      const Tensor cut = RunCut(
          model, input, cached, inputs[s],
          [&](const std::string& t) { return cache.WorthKeeping(t, k); },
          &computed[s], &with_cache);
      EXPECT_TRUE(SameBits(cut, whole)) << kernel << " sample " << s;
    }
    nodes_with_cache.push_back(with_cache);
    cache.Update(k, std::move(computed));
  }
  // conv1's input is x (nothing runs); conv2 reads r1, cached by conv1's
  // run; conv3 reads s0: only add1 and split run, from c2... which conv2's
  // run did not compute, so conv2 runs too (its input r1 is cached);
  // conv4: add2 and conv3 run from s0 and s1 (split's outputs, cached).
  EXPECT_EQ(nodes_with_cache, (std::vector<size_t>{0, 2, 3, 2}));
}

TEST(QuantizedInputsCache, KeepsWhatLaterNodesReadWithinTheBudget) {
  const Model model = ResidualModel();
  const Graph& g = model.graph;
  const int conv2 = NodeIndex(g, "conv2"), conv3 = NodeIndex(g, "conv3");
  // r1 is read by conv2 and add1; c1 only by relu1.
  QuantizedInputsCache cache(g, 2, /*budget_bytes=*/1000);
  EXPECT_TRUE(cache.WorthKeeping("r1", conv2));
  EXPECT_FALSE(cache.WorthKeeping("c1", conv2));
  EXPECT_FALSE(cache.WorthKeeping("z", conv2));  // a graph output only
  std::vector<std::map<std::string, Tensor>> produced(2);
  for (auto& p : produced) {
    p["r1"] = Tensor(DType::kFloat, {1, 8, 6, 6});  // 1152 B a sample
    p["s0"] = Tensor(DType::kFloat, {1, 4, 2, 2});  // 64 B
    p["s1"] = Tensor(DType::kFloat, {1, 4, 2, 2});
  }
  produced[1].erase("s1");  // a sample without it
  cache.Update(conv2, produced);
  // r1 (2304 B for both samples) is over the budget, s1 is not everywhere.
  EXPECT_EQ(cache.names(), (std::set<std::string>{"s0"}));
  // From conv3 on, nothing reads r1; s0 is still read by conv3.
  QuantizedInputsCache roomy(g, 2, /*budget_bytes=*/1 << 20);
  produced[1]["s1"] = Tensor(DType::kFloat, {1, 4, 2, 2});
  roomy.Update(conv2, produced);
  EXPECT_EQ(roomy.names(), (std::set<std::string>{"r1", "s0", "s1"}));
  roomy.Update(conv3, {});
  EXPECT_EQ(roomy.names(), (std::set<std::string>{"s0", "s1"}));
  roomy.Clear();
  EXPECT_TRUE(roomy.names().empty());
}

}  // namespace
}  // namespace quantd
