// Shape-only ops that share the input buffer: Reshape, Flatten, Squeeze,
// Unsqueeze, Identity, Dropout (inference), and Shape/Size.
#include <algorithm>
#include <set>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

absl::Status Reshape(KernelContext& ctx, const std::vector<int64_t>& spec,
                     bool allow_zero) {
  const Tensor& x = *ctx.input(0);
  std::vector<int64_t> shape(spec.size());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allow_zero) {
      if (i >= static_cast<size_t>(x.rank())) {
        return ctx.Error(absl::StrCat("shape[", i, "] = 0 copies a dim ",
                                      "the input ", x.DebugString(),
                                      " does not have"));
      }
      d = x.dim(i);
    }
    if (d == -1) {
      if (infer >= 0) return ctx.Error("shape has more than one -1");
      infer = static_cast<int>(i);
      shape[i] = 1;
      continue;
    }
    if (d < 0) return ctx.Error(absl::StrCat("shape[", i, "] = ", d));
    shape[i] = d;
    if (d != 0 && known > (int64_t{1} << 62) / d) {
      return ctx.Error("shape is too large");
    }
    known *= d;
  }
  if (infer >= 0) {
    if (known == 0 || x.num_elements() % known != 0) {
      return ctx.Error(absl::StrCat("cannot infer -1 reshaping ",
                                    x.DebugString(), " to ",
                                    ShapeString(spec)));
    }
    shape[infer] = x.num_elements() / known;
  }
  absl::StatusOr<Tensor> y = x.Reshaped(shape);
  if (!y.ok()) return ctx.Error(y.status().message());
  ctx.SetOutput(0, *std::move(y));
  return absl::OkStatus();
}

// Axes from the attribute (old opsets) or from input `k` (newer ones).
absl::StatusOr<std::vector<int64_t>> AxesOf(const KernelContext& ctx,
                                            bool from_input, int k,
                                            const std::vector<int64_t>& attr) {
  if (!from_input) return attr;
  const Tensor* t = ctx.input(k);
  if (t == nullptr) return std::vector<int64_t>{};
  return ReadInts(*t, "axes");
}

absl::Status SetReshaped(KernelContext& ctx, const Tensor& x,
                         std::vector<int64_t> shape) {
  absl::StatusOr<Tensor> y = x.Reshaped(std::move(shape));
  if (!y.ok()) return ctx.Error(y.status().message());
  ctx.SetOutput(0, *std::move(y));
  return absl::OkStatus();
}

// Reshape, Flatten, Squeeze, Unsqueeze.
void RegisterReshapes(KernelRegistry& r) {
  r.Register(
      "Reshape",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const bool allow_zero = info.node.GetInt("allowzero", 0) != 0;
        if (info.opset < 5) {
          const std::vector<int64_t> spec = info.node.GetInts("shape");
          return MakeKernel([spec, allow_zero](KernelContext& ctx) {
            return Reshape(ctx, spec, allow_zero);
          });
        }
        return MakeKernel([allow_zero](KernelContext& ctx) -> absl::Status {
          if (ctx.input(1) == nullptr) return ctx.Error("missing shape input");
          ASSIGN_OR_RETURN(std::vector<int64_t> spec,
                           ReadInts(*ctx.input(1), "shape"));
          return Reshape(ctx, spec, allow_zero);
        });
      });
  // [d0..d(axis-1), d(axis)..] -> [prod(d<axis), prod(d>=axis)]
  r.Register(
      "Flatten",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t axis = info.node.GetInt("axis", 1);
        return MakeKernel([axis](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          int64_t a = axis < 0 ? axis + x.rank() : axis;
          if (a < 0 || a > x.rank()) return ctx.Error("axis out of range");
          int64_t outer = 1;
          for (int64_t d = 0; d < a; ++d) outer *= x.dim(d);
          int64_t inner = 1;
          for (int64_t d = a; d < x.rank(); ++d) inner *= x.dim(d);
          return SetReshaped(ctx, x, {outer, inner});
        });
      });
  r.Register(
      "Squeeze",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const bool from_input = info.opset >= 13;
        const std::vector<int64_t> attr = info.node.GetInts("axes");
        return MakeKernel([=](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                           AxesOf(ctx, from_input, 1, attr));
          std::set<int64_t> drop;
          for (int64_t a : axes) {
            ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(a, x.rank(), "axes"));
            if (x.dim(n) != 1) {
              return ctx.Error(absl::StrCat("cannot squeeze axis ", a, " of ",
                                            x.DebugString()));
            }
            drop.insert(n);
          }
          std::vector<int64_t> shape;
          for (int64_t d = 0; d < x.rank(); ++d) {
            const bool squeeze =
                axes.empty() ? x.dim(d) == 1 : drop.count(d) > 0;
            if (!squeeze) shape.push_back(x.dim(d));
          }
          return SetReshaped(ctx, x, shape);
        });
      });
  r.Register(
      "Unsqueeze",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const bool from_input = info.opset >= 13;
        const std::vector<int64_t> attr = info.node.GetInts("axes");
        return MakeKernel([=](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                           AxesOf(ctx, from_input, 1, attr));
          const int64_t out_rank = x.rank() + static_cast<int64_t>(axes.size());
          std::vector<char> inserted(out_rank, 0);
          for (int64_t a : axes) {
            ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(a, out_rank, "axes"));
            if (inserted[n]) return ctx.Error("duplicate axes");
            inserted[n] = 1;
          }
          std::vector<int64_t> shape;
          int64_t k = 0;
          for (int64_t d = 0; d < out_rank; ++d) {
            shape.push_back(inserted[d] ? 1 : x.dim(k++));
          }
          return SetReshaped(ctx, x, shape);
        });
      });
}

// Identity, Dropout (inference), Shape, Size.
void RegisterIdentityAndShape(KernelRegistry& r) {
  r.Register("Identity",
             [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
               return MakeKernel([](KernelContext& ctx) {
                 ctx.SetOutput(0, *ctx.input(0));
                 return absl::OkStatus();
               });
             });
  // Inference: y = x, mask all true. Training mode with ratio > 0 is random
  // and not supported.
  r.Register(
      "Dropout",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const bool attr_training =
            info.opset < 7 && info.node.GetInt("is_test", 1) == 0;
        return MakeKernel([attr_training](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          bool training = attr_training;
          if (const Tensor* t = ctx.input(2)) {
            ASSIGN_OR_RETURN(double v, ReadScalar(*t, "training_mode"));
            training = v != 0;
          }
          if (training) {
            double ratio = 0.5;
            if (const Tensor* t = ctx.input(1)) {
              ASSIGN_OR_RETURN(ratio, ReadScalar(*t, "ratio"));
            }
            if (ratio != 0) {
              return absl::UnimplementedError(
                  "training-mode Dropout (random) is not supported");
            }
          }
          ctx.SetOutput(0, x);
          if (ctx.OutputWanted(1)) {
            ASSIGN_OR_RETURN(Tensor * mask,
                             ctx.Allocate(1, DType::kBool, x.shape()));
            std::fill_n(mask->mutable_data<bool>(), mask->num_elements(), true);
          }
          return absl::OkStatus();
        });
      });
  r.Register(
      "Shape",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const bool has_end = info.node.HasAttribute("end");
        const int64_t start = info.node.GetInt("start", 0);
        const int64_t end = info.node.GetInt("end", 0);
        return MakeKernel([=](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          const int64_t r = x.rank();
          auto clamp = [r](int64_t v) {
            if (v < 0) v += r;
            return std::clamp<int64_t>(v, 0, r);
          };
          const int64_t b = clamp(start);
          const int64_t e = has_end ? clamp(end) : r;
          const int64_t n = std::max<int64_t>(0, e - b);
          ASSIGN_OR_RETURN(Tensor * y, ctx.Allocate(0, DType::kInt64, {n}));
          for (int64_t i = 0; i < n; ++i)
            y->mutable_data<int64_t>()[i] = x.dim(b + i);
          return absl::OkStatus();
        });
      });
  r.Register(
      "Size", [](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return MakeKernel([](KernelContext& ctx) -> absl::Status {
          ASSIGN_OR_RETURN(Tensor * y, ctx.Allocate(0, DType::kInt64, {}));
          y->mutable_data<int64_t>()[0] = ctx.input(0)->num_elements();
          return absl::OkStatus();
        });
      });
}

}  // namespace

void RegisterShapeOps(KernelRegistry& r) {
  RegisterReshapes(r);
  RegisterIdentityAndShape(r);
}

}  // namespace quantd::exec
