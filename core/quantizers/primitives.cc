#include "core/quantizers/primitives.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/quantizers/internal/kernels.h"

namespace quantd::quantizers {

double MaxPowerOfTwo(double x, double min_threshold) {
  return std::pow(2.0, std::ceil(std::log2(std::max(x, min_threshold))));
}

float MaxPowerOfTwoF32(float x, double min_threshold) {
  // np.maximum(float32 array, python float) stays float32.
  const float m = std::max(x, static_cast<float>(min_threshold));
  return std::pow(2.0f, std::ceil(std::log2(m)));
}

double CalculateDelta(double threshold, int n_bits, bool is_signed) {
  return threshold /
         static_cast<double>(int64_t{1} << (n_bits - (is_signed ? 1 : 0)));
}

std::pair<double, double> FixRangeToIncludeZero(double range_min,
                                                double range_max, int n_bits) {
  double a, b;
  internal::FixRange(range_min, range_max, n_bits, &a, &b);
  return {a, b};
}

std::vector<float> QuantizeTensor(absl::Span<const float> x, double threshold,
                                  int n_bits, bool is_signed) {
  std::vector<float> out(x.size());
  const auto grid =
      internal::SymmetricGrid<double, float>(threshold, n_bits, is_signed);
  internal::QuantizeRow(x.data(), x.size(), grid, out.data());
  return out;
}

std::vector<float> UniformQuantizeTensor(absl::Span<const float> x,
                                         double range_min, double range_max,
                                         int n_bits) {
  std::vector<float> out(x.size());
  const auto grid =
      internal::UniformGrid<double, float>(range_min, range_max, n_bits);
  internal::QuantizeRow(x.data(), x.size(), grid, out.data());
  return out;
}

std::vector<double> QuantizeTensorF64(absl::Span<const double> x,
                                      double threshold, int n_bits,
                                      bool is_signed) {
  std::vector<double> out(x.size());
  const auto grid =
      internal::SymmetricGrid<double, double>(threshold, n_bits, is_signed);
  internal::QuantizeRow(x.data(), x.size(), grid, out.data());
  return out;
}

std::vector<double> UniformQuantizeTensorF64(absl::Span<const double> x,
                                             double range_min, double range_max,
                                             int n_bits) {
  std::vector<double> out(x.size());
  const auto grid =
      internal::UniformGrid<double, double>(range_min, range_max, n_bits);
  internal::QuantizeRow(x.data(), x.size(), grid, out.data());
  return out;
}

absl::StatusOr<PerChannelMatrix> ReshapeForPerChannel(const TensorView& tensor,
                                                      int axis) {
  const int rank = static_cast<int>(tensor.shape.size());
  if (axis < 0 || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "channel axis ", axis, " out of range for a rank-", rank, " tensor"));
  }
  int64_t total = 1;
  for (int64_t d : tensor.shape) {
    if (d < 0) return absl::InvalidArgumentError("negative dimension");
    total *= d;
  }
  if (total != static_cast<int64_t>(tensor.data.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor has ", tensor.data.size(),
                     " values but its shape holds ", total));
  }
  PerChannelMatrix m;
  m.channels = tensor.shape[axis];
  m.cols = m.channels == 0 ? 0 : total / m.channels;
  m.data.resize(total);
  // Row-major strides: outer (before axis), channel, inner (after axis).
  int64_t inner = 1;
  for (int i = axis + 1; i < rank; ++i) inner *= tensor.shape[i];
  int64_t outer = 1;
  for (int i = 0; i < axis; ++i) outer *= tensor.shape[i];
  // Transposed order: channel, then the remaining axes in order, i.e.
  // (outer, inner) flattened.
  for (int64_t c = 0; c < m.channels; ++c) {
    float* row = m.data.data() + c * m.cols;
    for (int64_t o = 0; o < outer; ++o) {
      const float* src = tensor.data.data() + (o * m.channels + c) * inner;
      std::copy(src, src + inner, row + o * inner);
    }
  }
  return m;
}

namespace {

double ExpansionFactor(int n_bits, bool is_uniform) {
  if (is_uniform) return 1.0;
  if (n_bits == 1) return 0.0;
  const double h = std::pow(2.0, n_bits - 1);
  return h / (h - 1);
}

}  // namespace

absl::StatusOr<std::vector<double>> GetTensorMax(const TensorView& tensor,
                                                 bool per_channel, int axis,
                                                 int n_bits, bool is_uniform) {
  if (n_bits < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("n_bits must be positive, got ", n_bits));
  }
  if (tensor.data.empty()) return absl::InvalidArgumentError("empty tensor");
  const double f = ExpansionFactor(n_bits, is_uniform);
  if (!per_channel) {
    auto [mn, mx] = std::minmax_element(tensor.data.begin(), tensor.data.end());
    // np.float32 * python float is float64 in NumPy 1.24.
    return std::vector<double>{
        std::max(-static_cast<double>(*mn), static_cast<double>(*mx) * f)};
  }
  auto m = ReshapeForPerChannel(tensor, axis);
  if (!m.ok()) return m.status();
  std::vector<double> out(m->channels);
  const float f32 = static_cast<float>(f);
  for (int64_t c = 0; c < m->channels; ++c) {
    const float* row = m->data.data() + c * m->cols;
    auto [mn, mx] = std::minmax_element(row, row + m->cols);
    // float32 array * float64 scalar stays float32.
    out[c] = std::max(-*mn, *mx * f32);
  }
  return out;
}

absl::StatusOr<std::vector<double>> GetTensorMin(const TensorView& tensor,
                                                 bool per_channel, int axis) {
  if (tensor.data.empty()) return absl::InvalidArgumentError("empty tensor");
  if (!per_channel) {
    return std::vector<double>{
        *std::min_element(tensor.data.begin(), tensor.data.end())};
  }
  auto m = ReshapeForPerChannel(tensor, axis);
  if (!m.ok()) return m.status();
  std::vector<double> out(m->channels);
  for (int64_t c = 0; c < m->channels; ++c) {
    const float* row = m->data.data() + c * m->cols;
    out[c] = *std::min_element(row, row + m->cols);
  }
  return out;
}

absl::StatusOr<std::vector<float>> IntQuantizationWithThreshold(
    const TensorView& tensor, absl::Span<const double> thresholds, int axis,
    int n_bits, bool is_signed, bool thresholds_f32, double eps) {
  const float a_max =
      static_cast<float>(is_signed ? (int64_t{1} << (n_bits - 1)) - 1
                                   : (int64_t{1} << n_bits) - 1);
  const float a_min =
      static_cast<float>(is_signed ? -(int64_t{1} << (n_bits - 1)) : 0);
  const float mult =
      static_cast<float>(int64_t{1} << (n_bits - (is_signed ? 1 : 0)));
  std::vector<float> out(tensor.data.size());
  auto divisor = [&](double t) -> float {
    if (thresholds_f32) {
      return static_cast<float>(t) + static_cast<float>(eps);
    }
    return static_cast<float>(t + eps);
  };
  auto apply = [&](float x, float d) {
    float v = (x / d) * mult;
    return std::min(std::max(v, a_min), a_max);
  };
  if (thresholds.size() == 1) {
    const float d = divisor(thresholds[0]);
    for (size_t i = 0; i < out.size(); ++i) out[i] = apply(tensor.data[i], d);
    return out;
  }
  const int rank = static_cast<int>(tensor.shape.size());
  if (axis < 0 || axis >= rank ||
      tensor.shape[axis] != static_cast<int64_t>(thresholds.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "got ", thresholds.size(), " thresholds for channel axis ", axis));
  }
  int64_t inner = 1;
  for (int i = axis + 1; i < rank; ++i) inner *= tensor.shape[i];
  const int64_t channels = tensor.shape[axis];
  std::vector<float> divisors(channels);
  for (int64_t c = 0; c < channels; ++c) divisors[c] = divisor(thresholds[c]);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t c = (static_cast<int64_t>(i) / inner) % channels;
    out[i] = apply(tensor.data[i], divisors[c]);
  }
  return out;
}

std::vector<double> IntQuantizationWithThresholdF64(absl::Span<const double> x,
                                                    double threshold,
                                                    int n_bits, bool is_signed,
                                                    double eps) {
  const double a_max =
      static_cast<double>(is_signed ? (int64_t{1} << (n_bits - 1)) - 1
                                    : (int64_t{1} << n_bits) - 1);
  const double a_min =
      static_cast<double>(is_signed ? -(int64_t{1} << (n_bits - 1)) : 0);
  const double mult =
      static_cast<double>(int64_t{1} << (n_bits - (is_signed ? 1 : 0)));
  const double d = threshold + eps;
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    out[i] = std::min(std::max((x[i] / d) * mult, a_min), a_max);
  }
  return out;
}

}  // namespace quantd::quantizers
