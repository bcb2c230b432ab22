// Add, Sub, Mul, Div with NumPy broadcasting: each operand's gradient is the
// output gradient times the partial derivative, summed over the dimensions
// the operand was broadcast along.
#include <cstdint>
#include <vector>

#include "core/autodiff/broadcast.h"
#include "core/autodiff/op_gradient.h"
#include "core/util/status_macros.h"

namespace quantd::autodiff::internal {
namespace {

enum class Op { kAdd, kSub, kMul, kDiv };

Op OpOf(const std::string& type) {
  if (type == "Add") return Op::kAdd;
  if (type == "Sub") return Op::kSub;
  if (type == "Mul") return Op::kMul;
  return Op::kDiv;
}

}  // namespace

absl::Status BinaryBackward(const OpGradContext& ctx,
                            std::vector<Tensor>* grads) {
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input A"));
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[1], "input B"));
  const Op op = OpOf(ctx.node->op_type);
  const Tensor& a = *ctx.inputs[0];
  const Tensor& b = *ctx.inputs[1];
  const Tensor dy = OutputGradOrZero(ctx, 0);
  const std::vector<int64_t>& out = dy.shape();
  const std::vector<std::vector<int64_t>> strides = {
      BroadcastStrides(a.shape(), out), BroadcastStrides(b.shape(), out)};
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  const float* g = dy.data<float>();
  for (int k = 0; k < 2; ++k) {
    if (!ctx.wants[k]) continue;
    Tensor d(DType::kFloat, ctx.inputs[k]->shape());
    float* pd = d.mutable_data<float>();
    const int other = 1 - k;
    ForEachRow(out, strides, [&](int64_t o, const int64_t* off, int64_t n) {
      const int64_t sk = strides[k].back(), so = strides[other].back();
      float* dk = pd + off[k];
      const float* x = (k == 0 ? pa : pb) + off[k];
      const float* y = (k == 0 ? pb : pa) + off[other];
      const float* gr = g + o;
      switch (op) {
        case Op::kAdd:
          for (int64_t j = 0; j < n; ++j) dk[j * sk] += gr[j];
          break;
        case Op::kSub:
          for (int64_t j = 0; j < n; ++j) dk[j * sk] += k == 0 ? gr[j] : -gr[j];
          break;
        case Op::kMul:
          for (int64_t j = 0; j < n; ++j) dk[j * sk] += gr[j] * y[j * so];
          break;
        case Op::kDiv:
          if (k == 0) {  // d(a/b)/da = 1/b
            for (int64_t j = 0; j < n; ++j) dk[j * sk] += gr[j] / y[j * so];
          } else {  // d(a/b)/db = -a/b^2
            for (int64_t j = 0; j < n; ++j) {
              const float bj = x[j * sk];
              dk[j * sk] -= gr[j] * y[j * so] / (bj * bj);
            }
          }
          break;
      }
    });
    (*grads)[k] = std::move(d);
  }
  return absl::OkStatus();
}

}  // namespace quantd::autodiff::internal
