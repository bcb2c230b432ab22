// histogram_bench [--model=FILE] [--samples=N] [--repeats=N]: the
// calibration observer's histogram (stats::HistogramOfBatch, 2048 bins) on
// the activations a job observes in MobileNetV2 (the outputs of its Clip and
// Add nodes and of the Convs no Clip follows; random inputs, untrained
// weights: timing only), against one float pass of the same samples in the
// same process. Prints nanoseconds per value from memory and from the
// caches, the latter's share of the pass, and a digest of every count (it
// must not move when the binning gets faster).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/executor/executor.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/stats/batch_histogram.h"

namespace {

double WallSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The tensors calibration observes: the outputs of Clip and Add, and of the
// Convs no Clip follows (of a fused Conv -> Clip only the Clip's output).
std::set<std::string> ObservedTensors(const quantd::Graph& g) {
  std::set<std::string> clipped;
  for (const quantd::Node& n : g.nodes) {
    if (n.op_type == "Clip" && !n.inputs.empty()) clipped.insert(n.inputs[0]);
  }
  std::set<std::string> observed;
  for (const quantd::Node& n : g.nodes) {
    if (n.op_type == "Clip" || n.op_type == "Add" ||
        (n.op_type == "Conv" && clipped.count(n.outputs[0]) == 0)) {
      observed.insert(n.outputs[0]);
    }
  }
  return observed;
}

}  // namespace

int main(int argc, char** argv) {
  using quantd::bench::IntFlag;
  const std::string path = quantd::bench::StringFlag(
      argc, argv, "model", "../shared/fixtures/bench-models/mobilenet_v2.onnx");
  const int samples = IntFlag(argc, argv, "samples", 8);
  const int repeats = IntFlag(argc, argv, "repeats", 5);
  auto bytes = quantd::ReadFileLimited(path, int64_t{1} << 31);
  if (!bytes.ok()) {
    std::fprintf(stderr, "%s\n", bytes.status().ToString().c_str());
    return 1;
  }
  auto model = quantd::ImportOnnx(*bytes);
  if (!model.ok() || model->graph.inputs.size() != 1) {
    std::fprintf(stderr, "%s: not a one-input model\n", path.c_str());
    return 1;
  }
  std::vector<int64_t> shape = model->graph.inputs[0].shape;
  for (int64_t& d : shape) d = d > 0 ? d : 1;
  const std::string input = model->graph.inputs[0].name;
  const auto shared = std::make_shared<const quantd::Model>(*model);
  auto exec = quantd::Executor::Create(shared, {});
  if (!exec.ok()) {
    std::fprintf(stderr, "%s\n", exec.status().ToString().c_str());
    return 1;
  }
  const std::set<std::string> observed = ObservedTensors(shared->graph);
  std::vector<quantd::Tensor> kept;
  const quantd::TensorObserver observer = [&](const quantd::Node& node, int k,
                                              const quantd::Tensor& value) {
    if (value.dtype() == quantd::DType::kFloat &&
        observed.count(node.outputs[k]) != 0) {
      kept.push_back(value.Clone());
    }
  };
  uint64_t state = 0x9e3779b97f4a7c15ull;
  double pass = 0;
  for (int s = 0; s < samples; ++s) {
    quantd::Tensor t(quantd::DType::kFloat, shape);
    quantd::bench::FillUniform(t.mutable_span<float>(), &state);
    const std::map<std::string, quantd::Tensor> feeds{{input, t}};
    const double t0 = WallSeconds();
    if (!(*exec)->Run(feeds).ok()) return 1;
    pass += WallSeconds() - t0;
    quantd::RunOptions options;
    options.observer = &observer;
    if (!(*exec)->Run(feeds, options).ok()) return 1;
  }
  int64_t values = 0;
  for (const quantd::Tensor& t : kept) values += t.num_elements();
  // Each tensor twice in a row: first from memory (the kept tensors are
  // far larger than the caches), then again at once, from the caches, as
  // calibration bins a tensor just produced.
  double cold = 1e30, warm = 1e30;
  uint64_t digest = quantd::bench::Fnv1a("");
  for (int r = 0; r < repeats; ++r) {
    double first = 0, again = 0;
    for (const quantd::Tensor& t : kept) {
      const double t0 = WallSeconds();
      auto h = quantd::stats::HistogramOfBatch(t.span<float>(), 2048, "x");
      const double t1 = WallSeconds();
      auto h2 = quantd::stats::HistogramOfBatch(t.span<float>(), 2048, "x");
      again += WallSeconds() - t1;
      first += t1 - t0;
      if (!h.ok() || !h2.ok() || h->counts != h2->counts) return 1;
      if (r == 0) {
        digest = quantd::bench::Fnv1a(
            {reinterpret_cast<const char*>(h->counts.data()),
             h->counts.size() * sizeof(uint32_t)},
            digest);
      }
    }
    cold = std::min(cold, first);
    warm = std::min(warm, again);
  }
  std::printf(
      "histograms of %zu tensors (%lld values, %d samples): %.3f s, %.2f "
      "ns/value (%.2f again at once: %.0f%% of the pass); float pass %.3f "
      "s; counts %016llx\n",
      kept.size(), static_cast<long long>(values), samples, cold,
      1e9 * cold / static_cast<double>(values),
      1e9 * warm / static_cast<double>(values), 100 * warm / pass, pass,
      static_cast<unsigned long long>(digest));
  return 0;
}
