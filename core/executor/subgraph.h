// Executors for control-flow branches (If): a subgraph that may read names of
// enclosing graphs, passed to Run as extra feeds.
#ifndef QUANTD_CORE_EXECUTOR_SUBGRAPH_H_
#define QUANTD_CORE_EXECUTOR_SUBGRAPH_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/executor/executor.h"
#include "core/graph/graph.h"

namespace quantd::exec {

absl::StatusOr<std::unique_ptr<Executor>> CreateSubgraphExecutor(
    std::shared_ptr<const Graph> graph, int64_t opset,
    const ExecutorOptions& options,
    const std::vector<std::string>& outer_scope);

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_SUBGRAPH_H_
