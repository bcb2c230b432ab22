// Times quantd's executor over a sample set the way tools/ort/run_model.js
// times ONNX Runtime, so run.sh can divide one by the other:
//
//   quantd_timing MODEL.onnx --inputs DIR [--threads N] [--warmup N]
//                 [--repeat N] [--profile]
//
// --profile: one more untimed pass over the samples with an observer that
// charges the time between consecutive node outputs to the node's op type;
// the table (op type, ms per sample, share, node count) goes to stderr.
//
// Per sample: `warmup` untimed runs, then `repeat` timed runs, median and
// minimum kept. Prints one JSON object:
// {"threads":N,"samples":S,"mean_of_median_ms":X,"mean_of_min_ms":Y}
// (the same fields as run_model.js --timing).
// --threads N means N threads in all (caller + N-1 pool workers), as ORT's
// intra_op_num_threads does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/executor/executor.h"
#include "core/graph/onnx_import.h"
#include "core/io/sample_set.h"
#include "core/runtime/thread_pool.h"

namespace quantd {
namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "quantd_timing: %s\n", message.c_str());
  return 1;
}

// Per-op-type time: the gap between one node's outputs and the previous
// node's is that node's run time (the observer is the only work in between).
void Profile(const Executor& executor,
             const std::vector<std::map<std::string, Tensor>>& samples) {
  using Clock = std::chrono::steady_clock;
  std::map<std::string, double> ms;
  std::map<std::string, std::set<std::string>> nodes;
  std::map<std::string, double> elements;
  std::map<std::string, std::pair<double, std::string>> per_node;
  // Shapes of every value seen so far (weights, feeds, node outputs), so a
  // slow node's line shows what it consumed.
  std::map<std::string, std::string> shapes;
  for (const auto& [name, t] : executor.model().graph.initializers) {
    shapes[name] = t.DebugString();
  }
  for (const auto& [name, t] : samples.front()) shapes[name] = t.DebugString();
  Clock::time_point last;
  const TensorObserver observer = [&](const Node& node, int output,
                                      const Tensor& value) {
    const Clock::time_point now = Clock::now();
    if (output == 0) {
      ms[node.op_type] +=
          std::chrono::duration<double, std::milli>(now - last).count();
      nodes[node.op_type].insert(node.name);
      elements[node.op_type] += static_cast<double>(value.num_elements());
      auto& [node_ms, label] = per_node[node.name];
      node_ms += std::chrono::duration<double, std::milli>(now - last).count();
      label = node.op_type + "(";
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const auto it = shapes.find(node.inputs[i]);
        label += (i ? ", " : "") +
                 (it == shapes.end() ? std::string("?") : it->second);
      }
      label += ") -> " + value.DebugString();
    }
    shapes[node.outputs[output]] = value.DebugString();
    last = Clock::now();
  };
  RunOptions options;
  options.observer = &observer;
  for (const auto& feeds : samples) {
    last = Clock::now();
    if (!executor.Run(feeds, options).ok()) return;
  }
  std::vector<std::pair<double, std::string>> rows;
  double total = 0;
  for (const auto& [op, t] : ms) {
    rows.emplace_back(t, op);
    total += t;
  }
  std::sort(rows.rbegin(), rows.rend());
  std::fprintf(stderr, "%-24s %12s %7s %6s %14s\n", "op type", "ms/sample",
               "share", "nodes", "out elems");
  for (const auto& [t, op] : rows) {
    std::fprintf(stderr, "%-24s %12.3f %6.1f%% %6zu %14.0f\n", op.c_str(),
                 t / samples.size(), 100.0 * t / total, nodes[op].size(),
                 elements[op] / samples.size());
  }
  std::vector<std::pair<double, std::string>> top;
  for (const auto& [name, v] : per_node) {
    top.emplace_back(v.first, name + " (" + v.second + ")");
  }
  std::sort(top.rbegin(), top.rend());
  std::fprintf(stderr, "slowest nodes:\n");
  for (size_t i = 0; i < top.size() && i < 12; ++i) {
    std::fprintf(stderr, "  %10.3f ms  %s\n", top[i].first / samples.size(),
                 top[i].second.c_str());
  }
}

int Main(int argc, char** argv) {
  std::string model_path, inputs;
  int threads = 1, warmup = 1, repeat = 5;
  bool profile = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--inputs" && has_value) {
      inputs = argv[++i];
    } else if (a == "--threads" && has_value) {
      threads = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--warmup" && has_value) {
      warmup = std::max(0, std::atoi(argv[++i]));
    } else if (a == "--repeat" && has_value) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--profile") {
      profile = true;
    } else if (a[0] != '-' && model_path.empty()) {
      model_path = a;
    } else {
      return Fail(
          "usage: quantd_timing MODEL.onnx --inputs DIR [--threads N] "
          "[--warmup N] [--repeat N] [--profile]");
    }
  }
  auto model = ImportOnnxFile(model_path);
  if (!model.ok()) return Fail(model.status().ToString());
  std::vector<std::string> names;
  for (const ValueInfo& v : model->graph.inputs) names.push_back(v.name);
  auto samples = ReadSampleSet(inputs, names);
  if (!samples.ok()) return Fail(samples.status().ToString());
  ThreadPool pool(threads - 1);
  auto executor = Executor::Create(*std::move(model), {&pool});
  if (!executor.ok()) return Fail(executor.status().ToString());

  double sum = 0, sum_min = 0;
  for (const auto& feeds : samples->samples) {
    std::vector<double> runs;
    for (int r = 0; r < warmup + repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      auto out = (*executor)->Run(feeds);
      const auto end = std::chrono::steady_clock::now();
      if (!out.ok()) return Fail(out.status().ToString());
      if (r >= warmup) {
        runs.push_back(
            std::chrono::duration<double, std::milli>(end - start).count());
      }
    }
    std::sort(runs.begin(), runs.end());
    const size_t m = runs.size() / 2;
    sum += runs.size() % 2 ? runs[m] : (runs[m - 1] + runs[m]) / 2;
    sum_min += runs.front();
  }
  if (profile && !samples->samples.empty()) {
    Profile(**executor, samples->samples);
  }
  std::printf(
      "{\"threads\": %d, \"samples\": %zu, \"mean_of_median_ms\": %.6f, "
      "\"mean_of_min_ms\": %.6f}\n",
      threads, samples->size(), sum / samples->size(),
      sum_min / samples->size());
  return 0;
}

}  // namespace
}  // namespace quantd

int main(int argc, char** argv) { return quantd::Main(argc, argv); }
