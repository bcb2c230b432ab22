// The downstream cone of a node: every node that depends on its outputs, as
// a runnable model whose graph inputs are the tensors it takes from outside
// the cone. Fed from a cached run of the whole model, it re-runs only what a
// change at that node can affect (mixed precision's sensitivity, the
// per-layer sensitivity analysis).
#ifndef QUANTD_CORE_PIPELINE_EVALUATION_DOWNSTREAM_CONE_H_
#define QUANTD_CORE_PIPELINE_EVALUATION_DOWNSTREAM_CONE_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EVALUATION_DOWNSTREAM_CONE_H_
