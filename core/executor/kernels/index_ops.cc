// Index-driven ops: GatherND, ScatterND, ScatterElements (and opset 9's
// Scatter), OneHot, NonZero, Trilu, EyeLike, Compress, ReverseSequence. Every
// index is range-checked before it is used (indices are untrusted feeds or
// model data).
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

absl::StatusOr<Reduction> ReadReduction(const KernelInfo& info) {
  const std::string r = info.node.GetString("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  return info.Error(absl::StrCat("unknown reduction '", r, "'"));
}

template <typename T>
void Reduce(Reduction r, T* dst, T v) {
  switch (r) {
    case Reduction::kNone:
      *dst = v;
      break;
    case Reduction::kAdd:
      *dst = static_cast<T>(*dst + v);
      break;
    case Reduction::kMul:
      *dst = static_cast<T>(*dst * v);
      break;
    case Reduction::kMax:
      *dst = *dst < v ? v : *dst;
      break;
    case Reduction::kMin:
      *dst = v < *dst ? v : *dst;
      break;
  }
}

// Index values of an int32/int64 tensor, unnormalised.
absl::StatusOr<std::vector<int64_t>> IndexValues(const KernelContext& ctx,
                                                 const Tensor& t) {
  if (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32) {
    return ctx.Error(
        absl::StrCat("indices must be int32 or int64, got ", t.DebugString()));
  }
  std::vector<int64_t> out(t.num_elements());
  if (t.dtype() == DType::kInt64) {
    std::memcpy(out.data(), t.raw(), out.size() * sizeof(int64_t));
  } else {
    const int32_t* p = t.data<int32_t>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = p[i];
  }
  return out;
}

// Maps v in [-dim, dim) to [0, dim); an error naming `what` otherwise.
absl::StatusOr<int64_t> Wrap(const KernelContext& ctx, int64_t v, int64_t dim,
                             absl::string_view what) {
  if (v < -dim || v >= dim) {
    return ctx.Error(absl::StrCat(what, " index ", v, " is out of range [",
                                  -dim, ", ", dim, ")"));
  }
  return v < 0 ? v + dim : v;
}

// The element offsets of the slices that the last dim of `indices` names in
// `data` (GatherND/ScatterND), batch_dims leading dims shared.
struct NdPlan {
  std::vector<int64_t> offsets;  // per (batch, index tuple), in elements
  int64_t slice = 1;             // elements per slice
  std::vector<int64_t> out_shape;
};

absl::StatusOr<NdPlan> PlanNd(const KernelContext& ctx, const Tensor& data,
                              const Tensor& indices, int64_t batch_dims,
                              absl::string_view what) {
  if (indices.rank() < 1) return ctx.Error("indices must have rank >= 1");
  const int64_t k = indices.dim(indices.rank() - 1);
  if (batch_dims < 0 ||
      (batch_dims > 0 && batch_dims >= std::min(data.rank(), indices.rank()))) {
    return ctx.Error(
        absl::StrCat("batch_dims ", batch_dims, " must be below both ranks"));
  }
  if (k < 1 || batch_dims + k > data.rank()) {
    return ctx.Error(absl::StrCat("indices last dim ", k, " does not fit data ",
                                  data.DebugString(), " with batch_dims ",
                                  batch_dims));
  }
  for (int64_t d = 0; d < batch_dims; ++d) {
    if (data.dim(d) != indices.dim(d)) {
      return ctx.Error("batch dims of data and indices differ");
    }
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> idx, IndexValues(ctx, indices));
  NdPlan p;
  for (int64_t d = batch_dims + k; d < data.rank(); ++d) p.slice *= data.dim(d);
  int64_t batch = 1;
  for (int64_t d = 0; d < batch_dims; ++d) batch *= data.dim(d);
  const int64_t tuples = k == 0 ? 0 : static_cast<int64_t>(idx.size()) / k;
  const int64_t per_batch = batch == 0 ? 0 : tuples / batch;
  const std::vector<int64_t> strides = StridesOf(data.shape());
  const int64_t batch_stride = batch_dims == 0 ? 0 : strides[batch_dims - 1];
  p.offsets.resize(tuples);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = (per_batch == 0 ? 0 : t / per_batch) * batch_stride;
    for (int64_t j = 0; j < k; ++j) {
      ASSIGN_OR_RETURN(
          int64_t v, Wrap(ctx, idx[t * k + j], data.dim(batch_dims + j), what));
      off += v * strides[batch_dims + j];
    }
    p.offsets[t] = off;
  }
  p.out_shape.assign(indices.shape().begin(), indices.shape().end() - 1);
  p.out_shape.insert(p.out_shape.end(), data.shape().begin() + batch_dims + k,
                     data.shape().end());
  return p;
}

absl::Status ComputeGatherNd(KernelContext& ctx, int64_t batch_dims) {
  const Tensor& data = *ctx.input(0);
  const Tensor& indices = *ctx.input(1);
  ASSIGN_OR_RETURN(NdPlan p,
                   PlanNd(ctx, data, indices, batch_dims, "GatherND"));
  ASSIGN_OR_RETURN(Tensor * y,
                   ctx.AllocateUninitialized(0, data.dtype(), p.out_shape));
  const size_t elem = DTypeSize(data.dtype());
  const char* in = static_cast<const char*>(data.raw());
  char* out = static_cast<char*>(y->mutable_raw());
  for (size_t t = 0; t < p.offsets.size(); ++t) {
    std::memcpy(out + t * p.slice * elem, in + p.offsets[t] * elem,
                p.slice * elem);
  }
  return absl::OkStatus();
}

absl::Status ComputeScatterNd(KernelContext& ctx, Reduction reduction) {
  const Tensor& data = *ctx.input(0);
  const Tensor& indices = *ctx.input(1);
  const Tensor& updates = *ctx.input(2);
  ASSIGN_OR_RETURN(NdPlan p, PlanNd(ctx, data, indices, 0, "ScatterND"));
  if (updates.dtype() != data.dtype() || updates.shape() != p.out_shape) {
    return ctx.Error(absl::StrCat("updates ", updates.DebugString(),
                                  " must have shape ",
                                  ShapeString(p.out_shape)));
  }
  Tensor out = data.Clone();
  auto scatter = [&]<typename T>(Tag<T>) {
    T* o = static_cast<T*>(out.mutable_raw());
    const T* u = static_cast<const T*>(updates.raw());
    for (size_t t = 0; t < p.offsets.size(); ++t) {
      for (int64_t j = 0; j < p.slice; ++j) {
        Reduce(reduction, o + p.offsets[t] + j, u[t * p.slice + j]);
      }
    }
  };
  if (reduction == Reduction::kNone) {
    RETURN_IF_ERROR(DispatchBySize(data.dtype(), scatter));
  } else {
    RETURN_IF_ERROR(DispatchNumeric(data.dtype(), scatter));
  }
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::Status ComputeScatterElements(KernelContext& ctx, int64_t axis_attr,
                                    Reduction reduction) {
  const Tensor& data = *ctx.input(0);
  const Tensor& indices = *ctx.input(1);
  const Tensor& updates = *ctx.input(2);
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axis_attr, data.rank()));
  if (indices.rank() != data.rank() || updates.shape() != indices.shape() ||
      updates.dtype() != data.dtype()) {
    return ctx.Error(absl::StrCat("indices ", indices.DebugString(),
                                  " and updates ", updates.DebugString(),
                                  " must have one shape and the rank of data ",
                                  data.DebugString()));
  }
  for (int64_t d = 0; d < data.rank(); ++d) {
    if (d != axis && indices.dim(d) > data.dim(d)) {
      return ctx.Error("indices shape exceeds data shape");
    }
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> idx, IndexValues(ctx, indices));
  const std::vector<int64_t> ds = StridesOf(data.shape());
  std::vector<int64_t> offsets(idx.size());
  const int64_t r = indices.rank();
  for (size_t i = 0; i < idx.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t v,
                     Wrap(ctx, idx[i], data.dim(axis), "ScatterElements"));
    int64_t rem = static_cast<int64_t>(i), off = 0;
    for (int64_t d = r - 1; d >= 0; --d) {
      const int64_t c = rem % indices.dim(d);
      rem /= indices.dim(d);
      off += (d == axis ? v : c) * ds[d];
    }
    offsets[i] = off;
  }
  Tensor out = data.Clone();
  auto scatter = [&]<typename T>(Tag<T>) {
    T* o = static_cast<T*>(out.mutable_raw());
    const T* u = static_cast<const T*>(updates.raw());
    for (size_t i = 0; i < offsets.size(); ++i) {
      Reduce(reduction, o + offsets[i], u[i]);
    }
  };
  if (reduction == Reduction::kNone) {
    RETURN_IF_ERROR(DispatchBySize(data.dtype(), scatter));
  } else {
    RETURN_IF_ERROR(DispatchNumeric(data.dtype(), scatter));
  }
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::Status ComputeOneHot(KernelContext& ctx, int64_t axis_attr) {
  const Tensor& indices = *ctx.input(0);
  ASSIGN_OR_RETURN(double depth_v, ReadScalar(*ctx.input(1), "depth"));
  const Tensor& values = *ctx.input(2);
  if (values.num_elements() != 2 || values.rank() != 1) {
    return ctx.Error(
        absl::StrCat("values must be [off, on], got ", values.DebugString()));
  }
  if (!(depth_v >= 1) || depth_v > 1e9) {
    return ctx.Error(absl::StrCat("depth ", depth_v, " must be in [1, 1e9]"));
  }
  const int64_t depth = static_cast<int64_t>(depth_v);
  const int64_t rank = indices.rank() + 1;
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axis_attr, rank));
  std::vector<int64_t> shape = indices.shape();
  shape.insert(shape.begin() + axis, depth);
  std::vector<double> idx(indices.num_elements());
  RETURN_IF_ERROR(DispatchNumeric(indices.dtype(), [&]<typename T>(Tag<T>) {
    const T* p = indices.data<T>();
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<double>(p[i]);
  }));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= indices.dim(d);
  for (int64_t d = axis; d < indices.rank(); ++d) inner *= indices.dim(d);
  return DispatchBySize(
      values.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
        ASSIGN_OR_RETURN(Tensor * y,
                         ctx.AllocateUninitialized(0, values.dtype(), shape));
        const T off = RawAs<T>(values)[0], on = RawAs<T>(values)[1];
        T* out = MutableRawAs<T>(*y);
        std::fill(out, out + y->num_elements(), off);
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t i = 0; i < inner; ++i) {
            // Fractional indices truncate toward zero (as numpy's
            // astype(int64)).
            int64_t v = static_cast<int64_t>(idx[o * inner + i]);
            if (v < 0) v += depth;
            if (v < 0 || v >= depth) continue;  // out of range: all `off`
            out[(o * depth + v) * inner + i] = on;
          }
        }
        return absl::OkStatus();
      });
}

absl::Status ComputeNonZero(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  std::vector<int64_t> hits;
  RETURN_IF_ERROR(DispatchAll(x.dtype(), [&]<typename T>(Tag<T>) {
    const T* p = x.data<T>();
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      if (p[i] != T(0)) hits.push_back(i);
    }
  }));
  const int64_t r = x.rank();
  const int64_t n = static_cast<int64_t>(hits.size());
  // A scalar counts as one dim of size 1 (numpy's nonzero of a 0-d array).
  const int64_t rows = std::max<int64_t>(r, 1);
  ASSIGN_OR_RETURN(Tensor * y,
                   ctx.AllocateUninitialized(0, DType::kInt64, {rows, n}));
  int64_t* out = y->mutable_data<int64_t>();
  if (r == 0) {
    for (int64_t j = 0; j < n; ++j) out[j] = 0;
    return absl::OkStatus();
  }
  for (int64_t j = 0; j < n; ++j) {
    int64_t rem = hits[j];
    for (int64_t d = r - 1; d >= 0; --d) {
      out[d * n + j] = rem % x.dim(d);
      rem /= x.dim(d);
    }
  }
  return absl::OkStatus();
}

absl::Status ComputeTrilu(KernelContext& ctx, bool upper) {
  const Tensor& x = *ctx.input(0);
  if (x.rank() < 2) return ctx.Error("input must have rank >= 2");
  int64_t k = 0;
  if (const Tensor* kt = ctx.input(1); kt != nullptr) {
    ASSIGN_OR_RETURN(double kv, ReadScalar(*kt, "k"));
    k = static_cast<int64_t>(kv);
  }
  const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  const int64_t mats = rows * cols == 0 ? 0 : x.num_elements() / (rows * cols);
  return DispatchBySize(x.dtype(), [&]<typename T>(Tag<T>) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx.AllocateUninitialized(0, x.dtype(), x.shape()));
    const T* in = RawAs<T>(x);
    T* out = MutableRawAs<T>(*y);
    for (int64_t m = 0; m < mats; ++m) {
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t o = (m * rows + i) * cols + j;
          const bool keep = upper ? j - i >= k : j - i <= k;
          out[o] = keep ? in[o] : T(0);
        }
      }
    }
    return absl::OkStatus();
  });
}

// EyeLike: ones on diagonal k of a 2-D shape, zeros elsewhere.
absl::Status ComputeEyeLike(KernelContext& ctx, int64_t k, DType dtype_attr) {
  const Tensor& x = *ctx.input(0);
  if (x.rank() != 2) return ctx.Error("input must be 2-D");
  const DType dtype = dtype_attr == DType::kUndefined ? x.dtype() : dtype_attr;
  return DispatchAll(dtype, [&]<typename T>(Tag<T>) -> absl::Status {
    ASSIGN_OR_RETURN(Tensor * y, ctx.Allocate(0, dtype, x.shape()));
    T* out = y->mutable_data<T>();
    for (int64_t i = 0; i < x.dim(0); ++i) {
      const int64_t j = i + k;
      if (j >= 0 && j < x.dim(1)) out[i * x.dim(1) + j] = T(1);
    }
    return absl::OkStatus();
  });
}

// Compress: the slices along axis (or elements of the flattened input) whose
// condition is true; a short condition leaves the rest out.
absl::Status ComputeCompress(KernelContext& ctx,
                             std::optional<int64_t> axis_attr) {
  const Tensor& x = *ctx.input(0);
  const Tensor& cond = *ctx.input(1);
  if (cond.dtype() != DType::kBool || cond.rank() != 1) {
    return ctx.Error(
        absl::StrCat("condition must be 1-D bool, got ", cond.DebugString()));
  }
  std::vector<int64_t> shape = {x.num_elements()};
  int64_t axis = 0;
  if (axis_attr) {
    ASSIGN_OR_RETURN(axis, NormalizeAxis(*axis_attr, x.rank()));
    shape = x.shape();
  }
  const int64_t dim = shape[axis];
  if (cond.num_elements() > dim) {
    return ctx.Error(absl::StrCat("condition has ", cond.num_elements(),
                                  " values for a dim of ", dim));
  }
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond.num_elements(); ++i) {
    if (cond.data<bool>()[i]) keep.push_back(i);
  }
  int64_t outer = 1, inner = DTypeSize(x.dtype());
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  std::vector<int64_t> out_shape = shape;
  out_shape[axis] = static_cast<int64_t>(keep.size());
  ASSIGN_OR_RETURN(Tensor * y,
                   ctx.AllocateUninitialized(0, x.dtype(), out_shape));
  const char* in = static_cast<const char*>(x.raw());
  char* out = static_cast<char*>(y->mutable_raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t j = 0; j < keep.size(); ++j) {
      std::memcpy(out + (o * keep.size() + j) * inner,
                  in + (o * dim + keep[j]) * inner, inner);
    }
  }
  return absl::OkStatus();
}

// ReverseSequence: per batch entry b, the first sequence_lens[b] steps along
// time_axis reversed, the rest copied.
absl::Status ComputeReverseSequence(KernelContext& ctx, int64_t batch_axis,
                                    int64_t time_axis) {
  const Tensor& x = *ctx.input(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> lens, IndexValues(ctx, *ctx.input(1)));
  if (x.rank() < 2 || (batch_axis != 0 && batch_axis != 1) ||
      (time_axis != 0 && time_axis != 1) || batch_axis == time_axis) {
    return ctx.Error("batch_axis and time_axis must be 0 and 1 (either way)");
  }
  const int64_t B = x.dim(batch_axis), Tn = x.dim(time_axis);
  if (static_cast<int64_t>(lens.size()) != B) {
    return ctx.Error(absl::StrCat("sequence_lens has ", lens.size(),
                                  " values for a batch of ", B));
  }
  for (int64_t l : lens) {
    if (l < 0 || l > Tn) {
      return ctx.Error(absl::StrCat("sequence length ", l,
                                    " is out of range [0, ", Tn, "]"));
    }
  }
  int64_t inner = DTypeSize(x.dtype());
  for (int64_t d = 2; d < x.rank(); ++d) inner *= x.dim(d);
  ASSIGN_OR_RETURN(Tensor * y,
                   ctx.AllocateUninitialized(0, x.dtype(), x.shape()));
  const char* in = static_cast<const char*>(x.raw());
  char* out = static_cast<char*>(y->mutable_raw());
  auto offset = [&](int64_t b, int64_t t) {
    const int64_t i0 = batch_axis == 0 ? b : t;
    const int64_t i1 = batch_axis == 0 ? t : b;
    return (i0 * x.dim(1) + i1) * inner;
  };
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < Tn; ++t) {
      const int64_t src = t < lens[b] ? lens[b] - 1 - t : t;
      std::memcpy(out + offset(b, t), in + offset(b, src), inner);
    }
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterIndexOps(KernelRegistry& r) {
  r.Register(
      "EyeLike",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t k = info.node.GetInt("k", 0);
        const DType dtype = static_cast<DType>(info.node.GetInt("dtype", 0));
        return MakeKernel([k, dtype](KernelContext& ctx) {
          return ComputeEyeLike(ctx, k, dtype);
        });
      });
  r.Register(
      "Compress",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        std::optional<int64_t> axis;
        if (info.node.HasAttribute("axis")) axis = info.node.GetInt("axis", 0);
        return MakeKernel(
            [axis](KernelContext& ctx) { return ComputeCompress(ctx, axis); });
      });
  r.Register(
      "ReverseSequence",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t batch_axis = info.node.GetInt("batch_axis", 1);
        const int64_t time_axis = info.node.GetInt("time_axis", 0);
        return MakeKernel([batch_axis, time_axis](KernelContext& ctx) {
          return ComputeReverseSequence(ctx, batch_axis, time_axis);
        });
      });
  r.Register(
      "GatherND",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t batch_dims = info.node.GetInt("batch_dims", 0);
        return MakeKernel([batch_dims](KernelContext& ctx) {
          return ComputeGatherNd(ctx, batch_dims);
        });
      });
  r.Register(
      "ScatterND",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        ASSIGN_OR_RETURN(Reduction red, ReadReduction(info));
        return MakeKernel(
            [red](KernelContext& ctx) { return ComputeScatterNd(ctx, red); });
      });
  for (const char* name : {"ScatterElements", "Scatter"}) {
    r.Register(
        name,
        [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
          const int64_t axis = info.node.GetInt("axis", 0);
          ASSIGN_OR_RETURN(Reduction red, ReadReduction(info));
          return MakeKernel([axis, red](KernelContext& ctx) {
            return ComputeScatterElements(ctx, axis, red);
          });
        });
  }
  r.Register(
      "OneHot",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t axis = info.node.GetInt("axis", -1);
        return MakeKernel(
            [axis](KernelContext& ctx) { return ComputeOneHot(ctx, axis); });
      });
  r.Register("NonZero",
             [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
               return MakeKernel(ComputeNonZero);
             });
  r.Register(
      "Trilu",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const bool upper = info.node.GetInt("upper", 1) != 0;
        return MakeKernel(
            [upper](KernelContext& ctx) { return ComputeTrilu(ctx, upper); });
      });
}

}  // namespace quantd::exec
