// The downstream cone of a node: every node that depends on its outputs, as
// a runnable model whose graph inputs are the tensors it takes from outside
// the cone. Fed from a cached run of the whole model, it re-runs only what a
// change at that node can affect (mixed precision's sensitivity, the
// per-layer sensitivity analysis).
#ifndef QUANTD_CORE_PIPELINE_EVALUATION_DOWNSTREAM_CONE_H_
#define QUANTD_CORE_PIPELINE_EVALUATION_DOWNSTREAM_CONE_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/executor/executor.h"
#include "core/graph/graph.h"

namespace quantd {

struct DownstreamCone {
  std::shared_ptr<Model> model;
  std::vector<std::string> inputs;  // fed from the cache, in first-use order
  std::set<std::string> produced;   // every tensor made inside
};

// The cone of node `start` (an index into model.graph.nodes). Initializers
// share their buffers with `model`; `dtypes` gives the dtype of the tensors
// that become cone inputs (float when absent). The cone's graph outputs are
// the model's outputs it produces.
DownstreamCone BuildDownstreamCone(const Model& model, int start,
                                   const std::map<std::string, DType>& dtypes);

// The same cone cut short: a path through it ends at the `depth`-th tensor
// of `points` it meets (the node making that tensor is the last of the path
// in the cone; `depth` 0 = no cut).
DownstreamCone BuildDownstreamCone(const Model& model, int start,
                                   const std::map<std::string, DType>& dtypes,
                                   const std::set<std::string>& points,
                                   int depth);

// The cone's inputs taken from `cache` (a run's tensors by name, feeds
// included); INTERNAL naming the tensor when one is missing.
absl::StatusOr<std::map<std::string, Tensor>> DownstreamConeFeeds(
    const DownstreamCone& cone, const std::map<std::string, Tensor>& cache);

// Where a run of a cone departs from the cached run that feeds it, so that
// the run may stop once its change has been absorbed (an activation
// quantizer rounding the changed values back onto the cached ones, a Relu
// clamping them): when no differing tensor has a consumer left to run and
// no graph output differs, every later node computes the cache's values
// (the same kernels on the same bytes). Node 0, the cone's start, is
// assumed to differ; a node whose cone inputs are all byte-identical to the
// cache computes the cache's values and is not compared.
class ConeDivergence {
 public:
  // Per cone: which produced tensors each node reads. `cone` must outlive
  // this and the trackers made from it.
  explicit ConeDivergence(const DownstreamCone& cone);

  // One run: `observer()` goes into RunOptions.observer of a run of the
  // cone's model (the same Node objects), `cache` holds the values of the
  // run that fed it, every produced tensor included. `on_converged` is
  // called once, from the observer, when the run's remaining nodes compute
  // the cache's values (so the run may be cancelled).
  class Tracker {
   public:
    Tracker(const ConeDivergence& cone,
            const std::map<std::string, Tensor>& cache,
            std::function<void()> on_converged);
    const TensorObserver& observer() const { return observer_; }
    bool converged() const { return converged_; }
    // Whether the run's value of a produced tensor differs from the cache's
    // (false for a tensor not produced yet, and after convergence for any
    // tensor not produced by then: it takes the cache's value).
    bool Differs(const std::string& tensor) const;

   private:
    void Observe(const Node& node, int output, const Tensor& value);

    const ConeDivergence& cone_;
    const std::map<std::string, Tensor>& cache_;
    std::function<void()> on_converged_;
    TensorObserver observer_;
    std::vector<char> differs_;  // per tensor id
    std::vector<int> unread_;    // consumers still to run, per tensor id
    int differing_live_ = 0;     // differing tensors with unread_ > 0
    int differing_outputs_ = 0;  // differing graph outputs
    int node_ = -1;              // node last observed
    bool node_differs_ = false;  // whether node_ reads a differing tensor
    bool converged_ = false;
  };

 private:
  const DownstreamCone& cone_;
  const Node* first_ = nullptr;           // the model's nodes, by address
  std::map<std::string, int> ids_;        // produced tensor -> id
  std::vector<std::vector<int>> reads_;   // per node: produced ids it reads
  std::vector<std::vector<int>> writes_;  // per node and output: id or -1
  std::vector<int> last_output_;          // per node: last non-empty output
  std::vector<int> consumers_;            // per id
  std::vector<char> graph_output_;        // per id
};

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EVALUATION_DOWNSTREAM_CONE_H_
