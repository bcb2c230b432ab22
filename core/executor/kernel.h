// Kernel interface of the executor (internal to core/executor).
//
// A kernel factory runs once per node at Executor::Create (Prepare): it reads
// and validates attributes and constant inputs and may pre-pack weights. The
// returned Kernel's Compute runs per sample, must be const and thread-safe,
// and validates what only run-time shapes can tell (feeds are untrusted).
#ifndef QUANTD_CORE_EXECUTOR_KERNEL_H_
#define QUANTD_CORE_EXECUTOR_KERNEL_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/executor/executor.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"
#include "core/runtime/thread_pool.h"

namespace quantd::exec {

// INVALID_ARGUMENT "<node label>: <message>": every kernel's error about its
// node, at preparation, at run time or from what it exports (the backward
// passes' attribute readers).
inline absl::Status NodeError(const Node& node, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(node.Label(), ": ", message));
}

// What a factory may look at while preparing a node.
struct KernelInfo {
  const Node& node;
  int64_t opset;  // default-domain opset of the model
  const Graph& graph;
  const ExecutorOptions& options;
  // Names visible from an enclosing graph (for If branches); may be empty.
  const std::vector<std::string>& outer_scope;

  // The constant value of input k (an initializer not overridable by a feed),
  // or nullptr when it is absent or only known at run time.
  const Tensor* ConstantInput(size_t k) const;
  // An INVALID_ARGUMENT error prefixed with the node label.
  absl::Status Error(absl::string_view message) const {
    return NodeError(node, message);
  }
};

class KernelContext {
 public:
  KernelContext(const Node& node, std::vector<const Tensor*> inputs,
                std::vector<Tensor>* outputs, ThreadPool* pool,
                int64_t max_tensor_bytes)
      : node_(node),
        inputs_(std::move(inputs)),
        outputs_(outputs),
        pool_(pool),
        max_tensor_bytes_(max_tensor_bytes) {}

  const Node& node() const { return node_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // nullptr for an absent optional input.
  const Tensor* input(int k) const {
    return k < num_inputs() ? inputs_[k] : nullptr;
  }
  int num_outputs() const { return static_cast<int>(outputs_->size()); }
  // False for an optional output the graph leaves unnamed.
  bool OutputWanted(int k) const {
    return k < static_cast<int>(node_.outputs.size()) &&
           !node_.outputs[k].empty();
  }

  // Allocates output k (zero-filled) after checking the size limit.
  absl::StatusOr<Tensor*> Allocate(int k, DType dtype,
                                   std::vector<int64_t> shape);
  // Same, contents unspecified: only for outputs the kernel writes entirely.
  absl::StatusOr<Tensor*> AllocateUninitialized(int k, DType dtype,
                                                std::vector<int64_t> shape);
  // Sets output k to an existing tensor (shares its buffer, e.g. Reshape).
  void SetOutput(int k, Tensor value) { (*outputs_)[k] = std::move(value); }

  // Input k itself, writable, when the executor hands it over: this step is
  // its last reader, no caller keeps it and no other tensor shares its
  // buffer; nullptr otherwise. A kernel that gets it must overwrite it in
  // place (same dtype and shape) and pass it on with SetOutput(j,
  // std::move(*t)); the input is gone afterwards.
  Tensor* DonatedInput(int k) {
    if (k < 0 || k >= kMaxDonated || donated_[k] == nullptr) return nullptr;
    Tensor* t = donated_[k];
    donated_[k] = nullptr;
    taken_ |= 1u << k;
    return t;
  }
  // Called by the executor before Compute: `value` is inputs_[k] itself.
  static constexpr int kMaxDonated = 4;  // only inputs 0..3 are donated
  void Donate(int k, Tensor* value) {
    if (k >= 0 && k < kMaxDonated) donated_[k] = value;
  }
  // True when the kernel took donated input k.
  bool InputTaken(int k) const {
    return k >= 0 && k < kMaxDonated && (taken_ >> k & 1) != 0;
  }

  ThreadPool* pool() const { return pool_; }
  int64_t max_tensor_bytes() const { return max_tensor_bytes_; }
  // Values of outer-scope names an If branch reads (set by the executor).
  std::vector<std::pair<std::string, const Tensor*>> implicit_inputs;
  const CancellationToken* cancel = nullptr;

  absl::Status Error(absl::string_view message) const {
    return NodeError(node_, message);
  }

 private:
  const Node& node_;
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor>* outputs_;
  ThreadPool* pool_;
  int64_t max_tensor_bytes_;
  std::array<Tensor*, kMaxDonated> donated_{};  // per input, or nullptr
  unsigned taken_ = 0;  // bit k: donated input k was taken
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual absl::Status Compute(KernelContext& ctx) const = 0;
};

using ComputeFn = std::function<absl::Status(KernelContext&)>;
// A kernel whose prepared state lives in the lambda's captures.
std::unique_ptr<Kernel> MakeKernel(ComputeFn fn);

using KernelFactory =
    std::function<absl::StatusOr<std::unique_ptr<Kernel>>(const KernelInfo&)>;

class KernelRegistry {
 public:
  static const KernelRegistry& Get();
  void Register(const std::string& op_type, KernelFactory factory);
  const KernelFactory* Find(const std::string& op_type) const;
  std::vector<std::string> OpTypes() const;

 private:
  std::vector<std::pair<std::string, KernelFactory>> factories_;
};

// Runs fn over [0, n) in chunks of `grain` on the pool (inline without one).
// Chunk boundaries never depend on the thread count.
void ParallelFor(ThreadPool* pool, int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)>& fn);

// Registration hooks, one per kernel file (called by kernel.cc).
// clang-format off
#define QUANTD_KERNEL_FILES(X)                                       \
  X(Activations) X(Binary) X(Variadic) X(Where) X(Clip) X(Conv)     \
  X(ConvTranspose) X(Gemm) X(MatMul) X(BatchNorm) X(Softmax)        \
  X(Pool) X(GlobalPool) X(Resize) X(Concat) X(Split) X(Slice)       \
  X(Pad) X(ShapeOps) X(Transpose) X(Expand) X(Tile) X(Gather)       \
  X(Cast) X(Constant) X(Range) X(Reduce) X(ArgMinMax)               \
  X(Normalization) X(DepthSpace) X(If) X(Rnn) X(Quantize) X(Einsum) \
  X(IndexOps) X(MctqQuantizers)
// clang-format on
#define QUANTD_DECLARE_REGISTER(name) void Register##name(KernelRegistry& r);
QUANTD_KERNEL_FILES(QUANTD_DECLARE_REGISTER)
#undef QUANTD_DECLARE_REGISTER

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_KERNEL_H_
