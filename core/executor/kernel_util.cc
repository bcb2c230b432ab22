#include "core/executor/kernel_util.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_join.h"

namespace quantd::exec {

absl::Status UnsupportedDType(absl::string_view what, DType dtype) {
  return absl::UnimplementedError(
      absl::StrCat("element type ", DTypeName(dtype),
                   " is not supported here (expected ", what, ")"));
}

absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank,
                                      absl::string_view what) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<int64_t>> ReadInts(const Tensor& t,
                                              absl::string_view what) {
  if (t.rank() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be 0-D or 1-D, got ", t.DebugString()));
  }
  std::vector<int64_t> out(t.num_elements());
  if (t.dtype() == DType::kInt64) {
    const int64_t* p = t.data<int64_t>();
    std::copy(p, p + t.num_elements(), out.begin());
  } else if (t.dtype() == DType::kInt32) {
    const int32_t* p = t.data<int32_t>();
    std::copy(p, p + t.num_elements(), out.begin());
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must be int32 or int64, got ", DTypeName(t.dtype())));
  }
  return out;
}

absl::StatusOr<double> ReadScalar(const Tensor& t, absl::string_view what) {
  if (t.num_elements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must hold exactly one value, got ", t.DebugString()));
  }
  double v = 0;
  absl::Status s = DispatchAll(t.dtype(), [&]<typename T>(Tag<T>) {
    v = static_cast<double>(t.data<T>()[0]);
  });
  if (!s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  }
  return v;
}

std::vector<int64_t> StridesOf(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    s[i] = s[i + 1] * shape[i + 1];
  }
  return s;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

absl::StatusOr<std::vector<int64_t>> BroadcastShape(
    const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("shapes ", ShapeString(a),
                                                     " and ", ShapeString(b),
                                                     " cannot be broadcast"));
    }
  }
  return out;
}

BroadcastPlan::BroadcastPlan(const std::vector<int64_t>& out_shape,
                             const std::vector<std::vector<int64_t>>& in_shapes)
    : n_(static_cast<int>(in_shapes.size())) {
  const size_t r = out_shape.size();
  // Per-dim strides of each input in output index space (0 = broadcast).
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides(n_);
  std::vector<std::vector<int64_t>> in_strides(n_);
  for (int i = 0; i < n_; ++i) {
    std::vector<int64_t> padded(r, 1);
    const auto& s = in_shapes[i];
    std::copy(s.begin(), s.end(), padded.begin() + (r - s.size()));
    in_strides[i] = StridesOf(padded);
    for (size_t d = 0; d < r; ++d) {
      if (padded[d] == 1) in_strides[i][d] = 0;
    }
  }
  for (size_t d = 0; d < r; ++d) {
    if (out_shape[d] == 1) continue;
    dims.push_back(out_shape[d]);
    for (int i = 0; i < n_; ++i) strides[i].push_back(in_strides[i][d]);
  }
  // Merge dim d into d+1 when every input walks them as one dimension.
  std::vector<int64_t> cdims;
  std::vector<std::vector<int64_t>> cstrides(n_);
  for (size_t d = 0; d < dims.size(); ++d) {
    bool merge = !cdims.empty();
    for (int i = 0; merge && i < n_; ++i) {
      merge = cstrides[i].back() == strides[i][d] * dims[d];
    }
    if (merge) {
      cdims.back() *= dims[d];
      for (int i = 0; i < n_; ++i) cstrides[i].back() = strides[i][d];
    } else {
      cdims.push_back(dims[d]);
      for (int i = 0; i < n_; ++i) cstrides[i].push_back(strides[i][d]);
    }
  }
  if (cdims.empty()) {
    inner_ = 1;
    rows_ = NumElements(out_shape) == 0 ? 0 : 1;
    return;
  }
  inner_ = cdims.back();
  for (int i = 0; i < n_; ++i) inner_step_[i] = cstrides[i].back();
  cdims.pop_back();
  outer_dims_ = cdims;
  outer_strides_.resize(n_);
  for (int i = 0; i < n_; ++i) {
    outer_strides_[i].assign(cstrides[i].begin(), cstrides[i].end() - 1);
  }
  rows_ = 1;
  for (int64_t d : outer_dims_) rows_ *= d;
  if (inner_ == 0) rows_ = 0;
}

void BroadcastPlan::RowOffsets(int64_t r, int64_t* in_offsets) const {
  for (int i = 0; i < n_; ++i) in_offsets[i] = 0;
  for (int d = static_cast<int>(outer_dims_.size()) - 1; d >= 0; --d) {
    const int64_t idx = r % outer_dims_[d];
    r /= outer_dims_[d];
    for (int i = 0; i < n_; ++i) in_offsets[i] += idx * outer_strides_[i][d];
  }
}

}  // namespace quantd::exec
