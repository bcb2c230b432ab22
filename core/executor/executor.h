// Executor: runs a graph-IR Model in float (and the integer types ONNX
// shape subgraphs and QDQ models need) on the CPU.
//
// Create() validates every node once (TFLite's Prepare/Eval split): an op the
// executor cannot run is UNIMPLEMENTED naming the op and the node, bad
// attributes are INVALID_ARGUMENT naming the node. Run() is const and
// thread-safe: several samples may run concurrently on one Executor. Kernels
// split work over independent output slices only, so outputs are bit-identical
// whatever the pool size (including no pool at all).
//
//   ASSIGN_OR_RETURN(auto exec, Executor::Create(std::move(model), {&pool}));
//   ASSIGN_OR_RETURN(auto outputs, exec->Run({{"input", image}}));
#ifndef QUANTD_CORE_EXECUTOR_EXECUTOR_H_
#define QUANTD_CORE_EXECUTOR_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/thread_pool.h"

namespace quantd {

struct ExecutorOptions {
  // Pool for intra-op parallelism; null runs every kernel on the caller. Not
  // owned; must outlive the Executor.
  ThreadPool* pool = nullptr;
  // Any single tensor a kernel would allocate above this is
  // RESOURCE_EXHAUSTED (untrusted shapes never reach the allocator).
  int64_t max_tensor_bytes = int64_t{4} << 30;
};

// Sees every tensor a node produces, without copying it (statistics
// collection). Called in topological order, after the rewriter, i.e. with the
// value the consumers will see. Graph inputs are not reported (the caller has
// them). Nodes inside If branches are not reported; the If outputs are.
// Element-wise kernels may later overwrite a value in place at its last use,
// but never one whose buffer is shared: keep a Tensor copy (no data copied),
// not a reference or pointer, to read a value after the call.
using TensorObserver = std::function<void(const Node& node, int output_index,
                                          const Tensor& value)>;
// May replace a produced tensor before any consumer sees it (fake
// quantization). The replacement must keep the shape; the dtype may change
// only if every consumer accepts it.
using TensorRewriter =
    std::function<void(const Node& node, int output_index, Tensor* value)>;

struct RunOptions {
  const TensorObserver* observer = nullptr;
  const TensorRewriter* rewriter = nullptr;
  // Polled between nodes; a cancelled run returns the token's status.
  const CancellationToken* cancel = nullptr;
  // Intermediate tensors to return besides the graph outputs (kept alive
  // past their last consumer). An unknown name is INVALID_ARGUMENT.
  std::vector<std::string> extra_outputs;
};

struct RunStats {
  // Peak of the bytes held at once by feeds and produced tensors
  // (initializers excluded), measured between nodes plus the node's outputs.
  int64_t peak_bytes = 0;
  int64_t nodes_run = 0;
  // Outputs written over their input's buffer (an element-wise node at the
  // input's last use, e.g. the Relu after a Conv): no fresh buffer.
  int64_t outputs_in_place = 0;
};

class Executor {
 public:
  // Validates the graph (topological order, dangling inputs, cycles) and every
  // node (Prepare). Constant weights may be pre-packed here.
  static absl::StatusOr<std::unique_ptr<Executor>> Create(
      Model model, const ExecutorOptions& options = {});
  // Same, for a model shared with other owners (not copied).
  static absl::StatusOr<std::unique_ptr<Executor>> Create(
      std::shared_ptr<const Model> model, const ExecutorOptions& options = {});

  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // feeds: graph input name -> tensor. Missing inputs, a wrong dtype or a dim
  // that contradicts a static dim of the graph input are INVALID_ARGUMENT;
  // dynamic dims are bound here. A feed for an unknown name or an
  // initializer is INVALID_ARGUMENT (constant weights may be pre-packed).
  // Returns the graph outputs and extra_outputs by name.
  absl::StatusOr<std::map<std::string, Tensor>> Run(
      const std::map<std::string, Tensor>& feeds,
      const RunOptions& options = {}, RunStats* stats = nullptr) const;

  const Model& model() const;
  const ExecutorOptions& options() const;

  class Impl;

 private:
  explicit Executor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Op types of the default ONNX domain the executor runs, sorted (for
// GetServerInfo and early rejection of a model).
std::vector<std::string> SupportedOps();
// True if the executor has a kernel for op_type in the default domain.
bool IsSupportedOp(const std::string& op_type);

}  // namespace quantd

#endif  // QUANTD_CORE_EXECUTOR_EXECUTOR_H_
