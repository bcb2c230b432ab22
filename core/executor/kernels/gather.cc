// Gather: y = data[:axis] + indices.shape + data[axis+1:] picked along axis.
// GatherElements: y[i] = data[i with i[axis] replaced by indices[i]].
#include <cstring>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

absl::StatusOr<std::vector<int64_t>> ReadIndices(const KernelContext& ctx,
                                                 const Tensor& idx,
                                                 int64_t dim) {
  std::vector<int64_t> out(idx.num_elements());
  if (idx.dtype() == DType::kInt64) {
    std::memcpy(out.data(), idx.raw(), out.size() * sizeof(int64_t));
  } else if (idx.dtype() == DType::kInt32) {
    const int32_t* p = idx.data<int32_t>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = p[i];
  } else {
    return ctx.Error("indices must be int32 or int64");
  }
  for (int64_t& v : out) {
    if (v < -dim || v >= dim) {
      return ctx.Error(absl::StrCat("index ", v, " is out of range [", -dim,
                                    ", ", dim, ")"));
    }
    if (v < 0) v += dim;
  }
  return out;
}

}  // namespace

void RegisterGather(KernelRegistry& r) {
  r.Register(
      "Gather",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t axis_attr = info.node.GetInt("axis", 0);
        return MakeKernel([axis_attr](KernelContext& ctx) -> absl::Status {
          const Tensor& data = *ctx.input(0);
          const Tensor& idx = *ctx.input(1);
          ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axis_attr, data.rank()));
          ASSIGN_OR_RETURN(auto indices, ReadIndices(ctx, idx, data.dim(axis)));
          std::vector<int64_t> shape(data.shape().begin(),
                                     data.shape().begin() + axis);
          shape.insert(shape.end(), idx.shape().begin(), idx.shape().end());
          shape.insert(shape.end(), data.shape().begin() + axis + 1,
                       data.shape().end());
          ASSIGN_OR_RETURN(Tensor * y, ctx.Allocate(0, data.dtype(), shape));
          int64_t outer = 1;
          for (int64_t d = 0; d < axis; ++d) outer *= data.dim(d);
          int64_t inner = DTypeSize(data.dtype());
          for (int64_t d = axis + 1; d < data.rank(); ++d) inner *= data.dim(d);
          const char* in = static_cast<const char*>(data.raw());
          char* out = static_cast<char*>(y->mutable_raw());
          const int64_t n = static_cast<int64_t>(indices.size());
          for (int64_t o = 0; o < outer; ++o) {
            for (int64_t i = 0; i < n; ++i) {
              std::memcpy(out + (o * n + i) * inner,
                          in + (o * data.dim(axis) + indices[i]) * inner,
                          inner);
            }
          }
          return absl::OkStatus();
        });
      });
  r.Register(
      "GatherElements",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t axis_attr = info.node.GetInt("axis", 0);
        return MakeKernel([axis_attr](KernelContext& ctx) -> absl::Status {
          const Tensor& data = *ctx.input(0);
          const Tensor& idx = *ctx.input(1);
          ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axis_attr, data.rank()));
          if (idx.rank() != data.rank()) return ctx.Error("rank mismatch");
          for (int64_t d = 0; d < data.rank(); ++d) {
            if (d != axis && idx.dim(d) > data.dim(d)) {
              return ctx.Error("indices shape exceeds data shape");
            }
          }
          ASSIGN_OR_RETURN(auto indices, ReadIndices(ctx, idx, data.dim(axis)));
          const std::vector<int64_t> ds = StridesOf(data.shape());
          return DispatchBySize(
              data.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
                ASSIGN_OR_RETURN(Tensor * y,
                                 ctx.Allocate(0, data.dtype(), idx.shape()));
                const T* in = RawAs<T>(data);
                T* out = MutableRawAs<T>(*y);
                const int64_t r = idx.rank();
                for (int64_t i = 0; i < idx.num_elements(); ++i) {
                  int64_t rem = i, off = 0;
                  for (int64_t d = r - 1; d >= 0; --d) {
                    const int64_t c = rem % idx.dim(d);
                    rem /= idx.dim(d);
                    off += (d == axis ? indices[i] : c) * ds[d];
                  }
                  out[i] = in[off];
                }
                return absl::OkStatus();
              });
        });
      });
}

}  // namespace quantd::exec
