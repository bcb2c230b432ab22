// Gemm, MatMul and Softmax.
//   Gemm:    Y = alpha * op(A) op(B) + beta * C
//            d op(A) = alpha dY op(B)^T, d op(B) = alpha op(A)^T dY,
//            dC = beta * dY summed over C's broadcast dimensions.
//   MatMul:  the same per batch (B 2-D, or equal batch dimensions).
//   Softmax: dx = y * (dy - sum(dy * y)) over the softmax group.
#include <Eigen/Core>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/autodiff/broadcast.h"
#include "core/autodiff/op_gradient.h"
#include "core/executor/gemm.h"
#include "core/util/status_macros.h"

namespace quantd::autodiff::internal {
namespace {

using Mat =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CMap = Eigen::Map<const Mat>;
using MMap = Eigen::Map<Mat>;

// Sums g (shape `out`) into a tensor of `shape` (NumPy broadcasting undone).
Tensor SumTo(const Tensor& g, const std::vector<int64_t>& shape, float k) {
  Tensor d(DType::kFloat, shape);
  float* pd = d.mutable_data<float>();
  const float* pg = g.data<float>();
  const std::vector<std::vector<int64_t>> strides = {
      BroadcastStrides(shape, g.shape())};
  ForEachRow(g.shape(), strides, [&](int64_t o, const int64_t* off, int64_t n) {
    const int64_t s = strides[0].back();
    for (int64_t j = 0; j < n; ++j) pd[off[0] + j * s] += k * pg[o + j];
  });
  return d;
}

}  // namespace

absl::Status GemmBackward(const OpGradContext& ctx,
                          std::vector<Tensor>* grads) {
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input A"));
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[1], "input B"));
  const Tensor& a = *ctx.inputs[0];
  const Tensor& b = *ctx.inputs[1];
  if (a.rank() != 2 || b.rank() != 2) {
    return NodeError(ctx, "Gemm inputs must be 2-D");
  }
  const bool ta = ctx.node->GetInt("transA", 0) != 0;
  const bool tb = ctx.node->GetInt("transB", 0) != 0;
  const float alpha = ctx.node->GetFloat("alpha", 1.0f);
  const float beta = ctx.node->GetFloat("beta", 1.0f);
  const Tensor dy = OutputGradOrZero(ctx, 0);
  CMap ma(a.data<float>(), a.dim(0), a.dim(1));
  CMap mb(b.data<float>(), b.dim(0), b.dim(1));
  CMap g(dy.data<float>(), dy.dim(0), dy.dim(1));
  if (ctx.wants[0]) {
    Tensor d = Tensor::Uninitialized(DType::kFloat, a.shape());
    MMap md(d.mutable_data<float>(), a.dim(0), a.dim(1));
    Mat opb = tb ? Mat(mb.transpose()) : Mat(mb);
    Mat dopa = alpha * (g * opb.transpose());
    md = ta ? Mat(dopa.transpose()) : dopa;
    (*grads)[0] = std::move(d);
  }
  if (ctx.wants[1]) {
    Tensor d = Tensor::Uninitialized(DType::kFloat, b.shape());
    MMap md(d.mutable_data<float>(), b.dim(0), b.dim(1));
    Mat opa = ta ? Mat(ma.transpose()) : Mat(ma);
    Mat dopb = alpha * (opa.transpose() * g);
    md = tb ? Mat(dopb.transpose()) : dopb;
    (*grads)[1] = std::move(d);
  }
  if (ctx.inputs.size() > 2 && ctx.inputs[2] != nullptr && ctx.wants[2]) {
    RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[2], "input C"));
    (*grads)[2] = SumTo(dy, ctx.inputs[2]->shape(), beta);
  }
  return absl::OkStatus();
}

absl::Status MatMulBackward(const OpGradContext& ctx,
                            std::vector<Tensor>* grads) {
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[0], "input A"));
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.inputs[1], "input B"));
  const Tensor& a = *ctx.inputs[0];
  const Tensor& b = *ctx.inputs[1];
  if (a.rank() < 2 || b.rank() < 2 ||
      (b.rank() != 2 && a.shape().size() != b.shape().size())) {
    return NodeUnimplemented(
        ctx, absl::StrCat("MatMul of ", a.DebugString(), " by ",
                          b.DebugString(), " (B 2-D or equal ranks only)"));
  }
  const int64_t m = a.dim(a.rank() - 2), k = a.dim(a.rank() - 1);
  const int64_t n = b.dim(b.rank() - 1);
  const int64_t batches = a.num_elements() / (m * k);
  const bool shared_b = b.rank() == 2;
  if (!shared_b && b.num_elements() != batches * k * n) {
    return NodeUnimplemented(ctx, "MatMul with broadcast batch dimensions");
  }
  const Tensor dy = OutputGradOrZero(ctx, 0);
  Tensor da, db;
  if (ctx.wants[0]) da = Tensor::Uninitialized(DType::kFloat, a.shape());
  if (ctx.wants[1]) db = Tensor(DType::kFloat, b.shape());
  // dA = dY B^T, dB = A^T dY: one product over all rows of A when B is
  // shared, else one per batch.
  const int64_t products = shared_b ? 1 : batches;
  const int64_t rows = shared_b ? batches * m : m;
  for (int64_t i = 0; i < products; ++i) {
    const float* ai = a.data<float>() + i * m * k;
    const float* bi = b.data<float>() + i * k * n;
    const float* gi = dy.data<float>() + i * m * n;
    if (ctx.wants[0]) {
      exec::GemmBlock<float>(false, true, rows, k, n, 1.0f, gi, n, bi, n,
                             da.mutable_data<float>() + i * m * k, k, false);
    }
    if (ctx.wants[1]) {
      exec::GemmBlock<float>(true, false, k, n, rows, 1.0f, ai, k, gi, n,
                             db.mutable_data<float>() + i * k * n, n, false);
    }
  }
  if (ctx.wants[0]) (*grads)[0] = std::move(da);
  if (ctx.wants[1]) (*grads)[1] = std::move(db);
  return absl::OkStatus();
}

absl::Status SoftmaxBackward(const OpGradContext& ctx,
                             std::vector<Tensor>* grads) {
  if (!ctx.wants[0]) return absl::OkStatus();
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.outputs[0], "output"));
  const Tensor& y = *ctx.outputs[0];
  const int rank = y.rank();
  int64_t axis = ctx.node->GetInt("axis", ctx.opset >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return NodeError(ctx, "axis out of range");
  int64_t outer = 1, group = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= y.dim(d);
  if (ctx.opset >= 13) {
    group = y.dim(static_cast<int>(axis));
    for (int d = static_cast<int>(axis) + 1; d < rank; ++d) inner *= y.dim(d);
  } else {  // opset < 13: softmax over the flattened tail
    for (int d = static_cast<int>(axis); d < rank; ++d) group *= y.dim(d);
  }
  const Tensor dy = OutputGradOrZero(ctx, 0);
  Tensor dx = Tensor::Uninitialized(DType::kFloat, y.shape());
  const float* py = y.data<float>();
  const float* pg = dy.data<float>();
  float* pd = dx.mutable_data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * group * inner + i;
      double dot = 0;
      for (int64_t j = 0; j < group; ++j) {
        dot += static_cast<double>(pg[base + j * inner]) * py[base + j * inner];
      }
      for (int64_t j = 0; j < group; ++j) {
        const int64_t q = base + j * inner;
        pd[q] = static_cast<float>(py[q] * (pg[q] - dot));
      }
    }
  }
  (*grads)[0] = std::move(dx);
  return absl::OkStatus();
}

}  // namespace quantd::autodiff::internal
