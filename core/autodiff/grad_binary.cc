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

// d[j * sd] += c * g[j] * (f ? f[j * sf] : 1) over one row, with the strides
// of the common cases (1: same shape, 0: broadcast) spelled out so the loops
// vectorise.
void RowAccumulate(float* d, int64_t sd, const float* g, const float* f,
                   int64_t sf, float c, int64_t n) {
  if (f != nullptr && sf == 0) {
    c *= f[0];
    f = nullptr;
  }
  if (f == nullptr) {
    if (sd == 1) {
      for (int64_t j = 0; j < n; ++j) d[j] += c * g[j];
    } else if (sd == 0) {
      float s = 0;
      for (int64_t j = 0; j < n; ++j) s += g[j];
      d[0] += c * s;
    } else {
      for (int64_t j = 0; j < n; ++j) d[j * sd] += c * g[j];
    }
  } else if (sd == 1 && sf == 1) {
    for (int64_t j = 0; j < n; ++j) d[j] += c * g[j] * f[j];
  } else if (sd == 0 && sf == 1) {
    float s = 0;
    for (int64_t j = 0; j < n; ++j) s += g[j] * f[j];
    d[0] += c * s;
  } else {
    for (int64_t j = 0; j < n; ++j) d[j * sd] += c * g[j] * f[j * sf];
  }
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
    // Div's divisor gradient uses -y / b (y = a / b) per element: its
    // factor tensor is the output; everything else is c * g * other.
    const Tensor* y = ctx.outputs[0];
    const bool divisor = op == Op::kDiv && k == 1;
    std::vector<std::vector<int64_t>> row_strides = strides;
    if (divisor) row_strides.push_back(BroadcastStrides(y->shape(), out));
    std::vector<float> inv;  // 1 / b for Div's dividend
    ForEachRow(out, row_strides, [&](int64_t o, const int64_t* off, int64_t n) {
      const int64_t sk = strides[k].back(), so = strides[other].back();
      float* dk = pd + off[k];
      const float* other_v = (k == 0 ? pb : pa) + off[other];
      const float* gr = g + o;
      switch (op) {
        case Op::kAdd:
          RowAccumulate(dk, sk, gr, nullptr, 0, 1.0f, n);
          break;
        case Op::kSub:
          RowAccumulate(dk, sk, gr, nullptr, 0, k == 0 ? 1.0f : -1.0f, n);
          break;
        case Op::kMul:
          RowAccumulate(dk, sk, gr, other_v, so, 1.0f, n);
          break;
        case Op::kDiv:
          if (!divisor) {  // d(a/b)/da = 1/b
            if (so == 0) {
              RowAccumulate(dk, sk, gr, nullptr, 0, 1.0f / other_v[0], n);
            } else {
              inv.resize(n);
              for (int64_t j = 0; j < n; ++j) inv[j] = 1.0f / other_v[j * so];
              RowAccumulate(dk, sk, gr, inv.data(), 1, 1.0f, n);
            }
          } else {  // d(a/b)/db = -(a/b)/b
            const float* bv = pb + off[1];
            const float* yv = y->data<float>() + off[2];
            const int64_t sy = row_strides[2].back();
            for (int64_t j = 0; j < n; ++j) {
              dk[j * sk] -= gr[j] * yv[j * sy] / bv[j * sk];
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
