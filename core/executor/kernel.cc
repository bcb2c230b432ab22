#include "core/executor/kernel.h"

#include <algorithm>
#include <set>

#include "core/util/half.h"

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

absl::StatusOr<Tensor*> KernelContext::AllocateUninitialized(
    int k, DType dtype, std::vector<int64_t> shape) {
  // Tensor::Create validates dtype, dims and the size limit; the checked
  // shape then gets an unzeroed buffer.
  const int64_t elem = static_cast<int64_t>(DTypeSize(dtype));
  const int64_t n = NumElements(shape);
  if (elem == 0 || n < 0 || n > max_tensor_bytes_ / elem) {
    return Allocate(k, dtype, std::move(shape));  // reports the error
  }
  (*outputs_)[k] = Tensor::Uninitialized(dtype, std::move(shape));
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

// Runs a float kernel on float16/bfloat16 tensors: half inputs are widened
// to float, float outputs narrowed back (round to nearest even), as ONNX
// Runtime's CPU provider does for ops without half kernels.
class HalfPromotingKernel final : public Kernel {
 public:
  explicit HalfPromotingKernel(std::unique_ptr<Kernel> inner)
      : inner_(std::move(inner)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    DType half = DType::kUndefined;
    for (int k = 0; k < ctx.num_inputs(); ++k) {
      const Tensor* t = ctx.input(k);
      if (t &&
          (t->dtype() == DType::kFloat16 || t->dtype() == DType::kBfloat16)) {
        half = t->dtype();
      }
    }
    if (half == DType::kUndefined) return inner_->Compute(ctx);
    std::vector<Tensor> widened(ctx.num_inputs());
    std::vector<const Tensor*> ins(ctx.num_inputs(), nullptr);
    for (int k = 0; k < ctx.num_inputs(); ++k) {
      const Tensor* t = ctx.input(k);
      if (t && t->dtype() == half) {
        absl::StatusOr<Tensor> f = t->CastToFloat();
        if (!f.ok()) return f.status();
        widened[k] = *std::move(f);
        ins[k] = &widened[k];
      } else {
        ins[k] = t;
      }
    }
    std::vector<Tensor> outs(ctx.num_outputs());
    KernelContext inner_ctx(ctx.node(), std::move(ins), &outs, ctx.pool(),
                            ctx.max_tensor_bytes());
    inner_ctx.cancel = ctx.cancel;
    absl::Status s = inner_->Compute(inner_ctx);
    if (!s.ok()) return s;
    for (int k = 0; k < ctx.num_outputs(); ++k) {
      if (outs[k].dtype() != DType::kFloat) {
        ctx.SetOutput(k, std::move(outs[k]));
        continue;
      }
      Tensor h(half, outs[k].shape());
      const float* p = outs[k].data<float>();
      uint16_t* q = static_cast<uint16_t*>(h.mutable_raw());
      for (int64_t i = 0; i < h.num_elements(); ++i) {
        q[i] =
            half == DType::kFloat16 ? FloatToHalf(p[i]) : FloatToBfloat16(p[i]);
      }
      ctx.SetOutput(k, std::move(h));
    }
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<Kernel> inner_;
};

// Ops computed in float for half inputs (element-wise and normalisation).
const std::set<std::string>& HalfPromotedOps() {
  static const auto* ops = new std::set<std::string>{"Relu",
                                                     "Abs",
                                                     "Neg",
                                                     "Sign",
                                                     "LeakyRelu",
                                                     "Sigmoid",
                                                     "Tanh",
                                                     "HardSigmoid",
                                                     "HardSwish",
                                                     "Elu",
                                                     "Celu",
                                                     "Selu",
                                                     "ThresholdedRelu",
                                                     "Gelu",
                                                     "Softplus",
                                                     "Softsign",
                                                     "Mish",
                                                     "Erf",
                                                     "Sqrt",
                                                     "Exp",
                                                     "Log",
                                                     "Reciprocal",
                                                     "Floor",
                                                     "Ceil",
                                                     "Round",
                                                     "Sin",
                                                     "Cos",
                                                     "Tan",
                                                     "Asin",
                                                     "Acos",
                                                     "Atan",
                                                     "Sinh",
                                                     "Cosh",
                                                     "Asinh",
                                                     "Acosh",
                                                     "Atanh",
                                                     "Add",
                                                     "Sub",
                                                     "Mul",
                                                     "Div",
                                                     "Mod",
                                                     "Pow",
                                                     "PRelu",
                                                     "Equal",
                                                     "Less",
                                                     "LessOrEqual",
                                                     "Greater",
                                                     "GreaterOrEqual",
                                                     "Sum",
                                                     "Mean",
                                                     "Min",
                                                     "Max",
                                                     "Clip",
                                                     "Softmax",
                                                     "LogSoftmax",
                                                     "Hardmax",
                                                     "LayerNormalization",
                                                     "InstanceNormalization",
                                                     "BatchNormalization",
                                                     "ReduceMean",
                                                     "ReduceSum",
                                                     "ReduceMax",
                                                     "ReduceMin",
                                                     "Conv",
                                                     "ConvTranspose",
                                                     "Gemm",
                                                     "MatMul",
                                                     "MaxPool",
                                                     "AveragePool",
                                                     "GlobalAveragePool",
                                                     "GlobalMaxPool",
                                                     "Resize",
                                                     "IsNaN"};
  return *ops;
}

}  // namespace

std::unique_ptr<Kernel> MakeKernel(ComputeFn fn) {
  return std::make_unique<LambdaKernel>(std::move(fn));
}

void ParallelFor(ThreadPool* pool, int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)>& fn) {
  ParallelForChunks(pool, n, grain, fn);
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
    for (auto& [name, factory] : r->factories_) {
      if (!HalfPromotedOps().count(name)) continue;
      KernelFactory inner = factory;
      factory = [inner](const KernelInfo& info)
          -> absl::StatusOr<std::unique_ptr<Kernel>> {
        absl::StatusOr<std::unique_ptr<Kernel>> k = inner(info);
        if (!k.ok()) return k;
        return std::unique_ptr<Kernel>(
            std::make_unique<HalfPromotingKernel>(*std::move(k)));
      };
    }
    return r;
  }();
  return *registry;
}

}  // namespace quantd::exec
