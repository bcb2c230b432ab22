// Split: cut x along axis into parts given by `split` (attribute before opset
// 13, input since), num_outputs (18) or equal parts (last may be smaller).
#include <cstring>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {

void RegisterSplit(KernelRegistry& r) {
  r.Register(
      "Split",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        const int64_t axis_attr = info.node.GetInt("axis", 0);
        const bool from_input = info.opset >= 13;
        const std::vector<int64_t> split_attr = info.node.GetInts("split");
        return MakeKernel([=](KernelContext& ctx) -> absl::Status {
          const Tensor& x = *ctx.input(0);
          ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axis_attr, x.rank()));
          const int64_t n = ctx.num_outputs();
          const int64_t dim = x.dim(axis);
          std::vector<int64_t> parts;
          if (from_input && ctx.input(1) != nullptr) {
            ASSIGN_OR_RETURN(parts, ReadInts(*ctx.input(1), "split"));
          } else if (!from_input && !split_attr.empty()) {
            parts = split_attr;
          } else if (!from_input && ctx.input(1) != nullptr) {
            ASSIGN_OR_RETURN(parts, ReadInts(*ctx.input(1), "split"));
          } else {
            const int64_t chunk = (dim + n - 1) / n;
            for (int64_t i = 0; i < n; ++i) {
              parts.push_back(
                  std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
            }
          }
          if (static_cast<int64_t>(parts.size()) != n) {
            return ctx.Error(absl::StrCat("split has ", parts.size(),
                                          " parts for ", n, " outputs"));
          }
          int64_t total = 0;
          for (int64_t p : parts) {
            if (p < 0) return ctx.Error("negative split");
            total += p;
          }
          if (total != dim) {
            return ctx.Error(
                absl::StrCat("split sums to ", total, ", axis has ", dim));
          }
          int64_t outer = 1;
          for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
          int64_t inner = DTypeSize(x.dtype());
          for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
          const char* in = static_cast<const char*>(x.raw());
          int64_t col = 0;
          for (int64_t k = 0; k < n; ++k) {
            std::vector<int64_t> shape = x.shape();
            shape[axis] = parts[k];
            ASSIGN_OR_RETURN(Tensor * y, ctx.Allocate(k, x.dtype(), shape));
            char* out = static_cast<char*>(y->mutable_raw());
            const int64_t row = parts[k] * inner;
            for (int64_t o = 0; o < outer && row > 0; ++o) {
              std::memcpy(out + o * row, in + o * dim * inner + col, row);
            }
            col += row;
          }
          return absl::OkStatus();
        });
      });
}

}  // namespace quantd::exec
