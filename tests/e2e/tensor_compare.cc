#include "tests/e2e/tensor_compare.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"

namespace quantd::e2e {
namespace {

std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> out(t.num_elements());
  auto fill = [&](auto* p) {
    for (int64_t i = 0; i < t.num_elements(); ++i) out[i] = p[i];
  };
  switch (t.dtype()) {
    case DType::kFloat:
      fill(t.data<float>());
      break;
    case DType::kDouble:
      fill(t.data<double>());
      break;
    case DType::kInt8:
      fill(t.data<int8_t>());
      break;
    case DType::kUint8:
      fill(t.data<uint8_t>());
      break;
    case DType::kInt16:
      fill(t.data<int16_t>());
      break;
    case DType::kUint16:
      fill(t.data<uint16_t>());
      break;
    case DType::kInt32:
      fill(t.data<int32_t>());
      break;
    case DType::kUint32:
      fill(t.data<uint32_t>());
      break;
    case DType::kInt64:
      fill(t.data<int64_t>());
      break;
    case DType::kUint64:
      fill(t.data<uint64_t>());
      break;
    case DType::kBool:
      fill(t.data<bool>());
      break;
    default:
      out.assign(t.num_elements(), std::nan(""));
      break;
  }
  return out;
}

int64_t ArgMax(const double* row, int64_t n) {
  return std::max_element(row, row + n) - row;
}

}  // namespace

Comparison CompareTensors(const Tensor& ours, const Tensor& ref) {
  Comparison c;
  c.same_dtype = ours.dtype() == ref.dtype();
  c.same_shape = ours.shape() == ref.shape();
  c.elements = ref.num_elements();
  if (!c.same_shape) return c;
  const std::vector<double> a = AsDoubles(ours);
  const std::vector<double> b = AsDoubles(ref);
  for (size_t i = 0; i < b.size(); ++i) {
    const bool fa = std::isfinite(a[i]);
    const bool fb = std::isfinite(b[i]);
    if (!fa || !fb) {
      // Equal infinities or two NaNs agree; anything else is a mismatch.
      const bool agree = (std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i];
      if (!agree) ++c.non_finite_mismatches;
      continue;
    }
    c.max_abs_error = std::max(c.max_abs_error, std::fabs(a[i] - b[i]));
    c.max_abs_ref = std::max(c.max_abs_ref, std::fabs(b[i]));
  }
  if (c.max_abs_ref > 0) {
    c.relative_error = c.max_abs_error / c.max_abs_ref;
  } else if (c.max_abs_error > 0) {
    c.relative_error = INFINITY;
  }
  const int64_t classes = ref.rank() > 0 ? ref.shape().back() : 0;
  if (classes >= 2) {
    c.argmax_rows = c.elements / classes;
    for (int64_t r = 0; r < c.argmax_rows; ++r) {
      if (ArgMax(&a[r * classes], classes) !=
          ArgMax(&b[r * classes], classes)) {
        ++c.argmax_disagreements;
      }
    }
  }
  return c;
}

std::string Comparison::Summary() const {
  if (!same_shape) return "shape mismatch";
  std::string s =
      absl::StrFormat("max abs err %.3g, max |ref| %.3g, rel err %.3g",
                      max_abs_error, max_abs_ref, relative_error);
  if (non_finite_mismatches > 0) {
    absl::StrAppendFormat(&s, ", %d NaN/Inf mismatches", non_finite_mismatches);
  }
  if (argmax_rows > 0) {
    absl::StrAppendFormat(&s, ", argmax agrees on %d/%d rows",
                          argmax_rows - argmax_disagreements, argmax_rows);
  }
  return s;
}

}  // namespace quantd::e2e
