// The float model and the fake-quant model run as one graph, for the
// report's comparison of every tensor's two values (evaluation.cc): each
// float node runs just before the fake-quant node that produces the tensor
// of the same name, so that the two values meet while the float one is
// still in cache, and a sample's float values are never held all at once
// (run apart, the float run kept them all until the fake-quant run reached
// them: a whole sample's activations written to memory and read back).
//
// The float side's tensors and nodes carry the prefix kFloatPrefix; the
// fake-quant side keeps its names, so the activation fake-quantizer's
// rewriter (keyed by tensor name) applies to it alone. Each side computes
// exactly what it computes alone: the same kernels on the same inputs.
#ifndef QUANTD_CORE_PIPELINE_EVALUATION_PAIRED_MODELS_H_
#define QUANTD_CORE_PIPELINE_EVALUATION_PAIRED_MODELS_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/executor/executor.h"
#include "core/graph/graph.h"

namespace quantd {

inline constexpr absl::string_view kFloatPrefix = "[float] ";

class PairedModels {
 public:
  // nullptr (not an error) where the two cannot run as one: a node with a
  // subgraph (its outer-scope reads would need renaming), different
  // opsets, or a float name that already starts with kFloatPrefix. Errors
  // are the executor's.
  static absl::StatusOr<std::unique_ptr<PairedModels>> Create(
      const Model& float_model, const Model& fake_quant_model,
      const ExecutorOptions& options);

  // Whether a graph can be one side: no node with a subgraph, no name that
  // starts with kFloatPrefix. The admission estimate asks it of the model.
  static bool CanPair(const Graph& g);

  const Executor& executor() const { return *executor_; }

  // One run's graph outputs, each side under its own model's names.
  struct Outputs {
    std::map<std::string, Tensor> float_side, fake_quant;
  };
  using FloatObserver =
      std::function<void(const std::string& name, const Tensor& value)>;

  // Both sides on their feeds, as one run: `float_observer` sees each
  // float-side value under its float model's name; `options` (observer,
  // rewriter, cancel) apply to the fake-quant side. A float-side node in an
  // error reads "float <node>".
  absl::StatusOr<Outputs> Run(const std::map<std::string, Tensor>& float_feeds,
                              std::map<std::string, Tensor> fake_quant_feeds,
                              const FloatObserver& float_observer,
                              RunOptions options) const;

  // The float side's feeds under their prefixed names, with the fake-quant
  // side's feeds as given.
  std::map<std::string, Tensor> Feeds(
      const std::map<std::string, Tensor>& float_feeds,
      std::map<std::string, Tensor> fake_quant_feeds) const;

  // Whether `name` is a float-side tensor; if so, `*original` is its name in
  // the float model.
  static bool FloatSide(absl::string_view name, absl::string_view* original);

 private:
  explicit PairedModels(std::unique_ptr<Executor> executor)
      : executor_(std::move(executor)) {}
  std::unique_ptr<Executor> executor_;
};

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EVALUATION_PAIRED_MODELS_H_
