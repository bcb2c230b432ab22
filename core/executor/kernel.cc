#include "core/executor/kernel.h"

#include <algorithm>

namespace quantd::exec {

const Tensor* KernelInfo::ConstantInput(size_t k) const {
  return graph.FindInitializer(node.Input(k));
}

absl::StatusOr<Tensor*> KernelContext::Allocate(int k, DType dtype,
                                                std::vector<int64_t> shape) {
  absl::StatusOr<Tensor> t =
      Tensor::Create(dtype, std::move(shape), max_tensor_bytes_);
  if (!t.ok()) {
    return absl::Status(t.status().code(),
                        absl::StrCat(node_.Label(), ": output ", k, ": ",
                                     t.status().message()));
  }
  (*outputs_)[k] = *std::move(t);
  return &(*outputs_)[k];
}

namespace {

class LambdaKernel final : public Kernel {
 public:
  explicit LambdaKernel(ComputeFn fn) : fn_(std::move(fn)) {}
  absl::Status Compute(KernelContext& ctx) const override { return fn_(ctx); }

 private:
  ComputeFn fn_;
};

}  // namespace

std::unique_ptr<Kernel> MakeKernel(ComputeFn fn) {
  return std::make_unique<LambdaKernel>(std::move(fn));
}

void ParallelFor(ThreadPool* pool, int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (pool == nullptr || pool->num_threads() == 0 || n <= grain) {
    // Same chunking as the pool so per-chunk reductions stay identical.
    for (int64_t b = 0; b < n; b += grain) fn(b, std::min(n, b + grain));
    return;
  }
  pool->ParallelFor(n, grain, fn);
}

void KernelRegistry::Register(const std::string& op_type,
                              KernelFactory factory) {
  factories_.emplace_back(op_type, std::move(factory));
}

const KernelFactory* KernelRegistry::Find(const std::string& op_type) const {
  for (const auto& [name, f] : factories_) {
    if (name == op_type) return &f;
  }
  return nullptr;
}

std::vector<std::string> KernelRegistry::OpTypes() const {
  std::vector<std::string> out;
  for (const auto& [name, f] : factories_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

const KernelRegistry& KernelRegistry::Get() {
  static const KernelRegistry* registry = [] {
    auto* r = new KernelRegistry();
#define QUANTD_CALL_REGISTER(name) Register##name(*r);
    QUANTD_KERNEL_FILES(QUANTD_CALL_REGISTER)
#undef QUANTD_CALL_REGISTER
    return r;
  }();
  return *registry;
}

}  // namespace quantd::exec
