#include "core/quantizers/corrections.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/quantizers/error_functions.h"
#include "core/quantizers/internal/kernels.h"
#include "core/quantizers/primitives.h"
#include "core/quantizers/selection.h"
#include "core/util/status_macros.h"

namespace quantd::quantizers {
namespace {

absl::Status CheckKernel(const TensorView& kernel, int axis, const char* what) {
  int64_t total = 1;
  for (int64_t d : kernel.shape) total *= d;
  if (total != static_cast<int64_t>(kernel.data.size()) || total == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel has ", kernel.data.size(), " values, its shape holds ", total));
  }
  if (axis < 0 || axis >= static_cast<int>(kernel.shape.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " axis ", axis, " out of range for a rank-",
                     kernel.shape.size(), " kernel"));
  }
  return absl::OkStatus();
}

// Index along `axis` of flat element i.
int64_t IndexAlong(const std::vector<int64_t>& shape, int axis, int64_t i) {
  int64_t inner = 1;
  for (size_t a = axis + 1; a < shape.size(); ++a) inner *= shape[a];
  return (i / inner) % shape[axis];
}

}  // namespace

absl::StatusOr<std::vector<double>> WeightsBiasCorrection(
    const TensorView& kernel, absl::Span<const float> quantized_kernel,
    int out_axis, int in_axis, absl::Span<const double> input_mean,
    int groups) {
  RETURN_IF_ERROR(CheckKernel(kernel, out_axis, "output channel"));
  RETURN_IF_ERROR(CheckKernel(kernel, in_axis, "input channel"));
  if (quantized_kernel.size() != kernel.data.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantized kernel has ", quantized_kernel.size(),
                     " values, the kernel ", kernel.data.size()));
  }
  if (groups < 1 || out_axis == in_axis) {
    return absl::InvalidArgumentError(
        "bias correction needs groups >= 1 and distinct in/out axes");
  }
  const int64_t out_dim = kernel.shape[out_axis];
  const int64_t in_dim = kernel.shape[in_axis];
  const int64_t channels_in = static_cast<int64_t>(input_mean.size());
  // Conv layout: the in axis holds C/groups; ConvTranspose: the out axis
  // holds M/groups.
  bool in_per_group;
  if (in_dim * groups == channels_in && out_dim % groups == 0) {
    in_per_group = true;
  } else if (in_dim == channels_in && in_dim % groups == 0) {
    in_per_group = false;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel [out ", out_dim, ", in ", in_dim, "] with ", groups,
        " groups does not match ", channels_in, " input means"));
  }
  const int64_t m = in_per_group ? out_dim : out_dim * groups;
  // eps[o_local, i_local] summed over the other axes.
  std::vector<double> eps(out_dim * in_dim, 0.0);
  for (size_t i = 0; i < kernel.data.size(); ++i) {
    const int64_t o = IndexAlong(kernel.shape, out_axis, i);
    const int64_t c = IndexAlong(kernel.shape, in_axis, i);
    eps[o * in_dim + c] += static_cast<double>(quantized_kernel[i]) -
                           static_cast<double>(kernel.data[i]);
  }
  std::vector<double> term(m, 0.0);
  if (in_per_group) {
    const int64_t out_per_group = out_dim / groups;
    for (int64_t o = 0; o < out_dim; ++o) {
      const int64_t g = o / out_per_group;
      for (int64_t c = 0; c < in_dim; ++c) {
        term[o] += eps[o * in_dim + c] * input_mean[g * in_dim + c];
      }
    }
  } else {
    const int64_t in_per_g = in_dim / groups;
    for (int64_t c = 0; c < in_dim; ++c) {
      const int64_t g = c / in_per_g;
      for (int64_t o = 0; o < out_dim; ++o) {
        term[g * out_dim + o] += eps[o * in_dim + c] * input_mean[c];
      }
    }
  }
  return term;
}

absl::StatusOr<std::vector<double>> KernelSumPerOutput(const TensorView& kernel,
                                                       int out_axis) {
  RETURN_IF_ERROR(CheckKernel(kernel, out_axis, "output channel"));
  std::vector<double> sum(kernel.shape[out_axis], 0.0);
  for (size_t i = 0; i < kernel.data.size(); ++i) {
    sum[IndexAlong(kernel.shape, out_axis, i)] += kernel.data[i];
  }
  return sum;
}

absl::StatusOr<std::vector<double>> FakeQuantizeActivation(
    absl::Span<const double> values, const ActivationQuantParams& p) {
  if (p.n_bits < 1 || p.n_bits > 30) {
    return absl::InvalidArgumentError(
        absl::StrCat("n_bits must be in [1, 30], got ", p.n_bits));
  }
  switch (p.method) {
    case QuantizationMethod::kPowerOfTwo:
    case QuantizationMethod::kSymmetric:
      if (!(p.threshold > 0)) {
        return absl::InvalidArgumentError("activation threshold must be > 0");
      }
      return QuantizeTensorF64(values, p.threshold, p.n_bits, p.is_signed);
    case QuantizationMethod::kUniform:
      if (!(p.range_max >= p.range_min)) {
        return absl::InvalidArgumentError("activation range_max < range_min");
      }
      return UniformQuantizeTensorF64(values, p.range_min, p.range_max,
                                      p.n_bits);
    default:
      return absl::UnimplementedError(
          absl::StrCat("fake quantization of ",
                       QuantizationMethodName(p.method), " activations"));
  }
}

absl::StatusOr<std::optional<std::vector<double>>> ActivationBiasCorrectionTerm(
    const Histogram& h, const ActivationQuantParams& p,
    const TensorView& kernel, int out_axis, double threshold_percent) {
  RETURN_IF_ERROR(ValidateHistogram(h));
  const size_t n = h.counts.size();
  std::vector<double> centers(n);
  for (size_t i = 0; i < n; ++i) centers[i] = (h.edges[i] + h.edges[i + 1]) / 2;
  ASSIGN_OR_RETURN(std::vector<double> q, FakeQuantizeActivation(centers, p));
  double total = 0, mean = 0, shift = 0;
  for (size_t i = 0; i < n; ++i) {
    total += h.counts[i];
    mean += centers[i] * h.counts[i];
    shift += (q[i] - centers[i]) * h.counts[i];
  }
  mean /= total;
  shift /= total;
  if (100.0 * std::abs(shift) < threshold_percent * std::abs(mean)) {
    return std::optional<std::vector<double>>();
  }
  ASSIGN_OR_RETURN(std::vector<double> sum,
                   KernelSumPerOutput(kernel, out_axis));
  for (double& v : sum) v *= shift;
  return std::optional<std::vector<double>>(std::move(sum));
}

absl::StatusOr<ShiftNegativeParams> ShiftNegativeCorrection(
    double min_value, double threshold, int n_bits, double ratio,
    const Histogram* search_histogram) {
  if (!(threshold > 0) || n_bits < 1 || n_bits > 30) {
    return absl::InvalidArgumentError(
        "shift-negative correction needs threshold > 0 and 1 <= n_bits <= 30");
  }
  ShiftNegativeParams out;
  out.threshold = threshold;
  if (!(min_value < 0) || std::abs(min_value) / threshold > ratio) return out;
  out.apply = true;
  const int levels = 1 << n_bits;
  auto grid = [&](double t) {
    return internal::Linspace(0, t - t / levels, levels);
  };
  const std::vector<double> q = grid(threshold);
  out.shift = q.back();
  for (double v : q) {
    if (v >= std::abs(min_value)) {
      out.shift = v;
      break;
    }
  }
  if (search_histogram == nullptr) return out;
  RETURN_IF_ERROR(ValidateHistogram(*search_histogram));
  double best = std::numeric_limits<double>::infinity();
  for (double t : {threshold, 2 * threshold}) {
    for (double s : grid(t)) {
      Histogram shifted = *search_histogram;
      shifted.float32_edges = false;
      for (double& e : shifted.edges) e += s;
      const std::vector<double> qe =
          QuantizeTensorF64(shifted.edges, t, n_bits, /*is_signed=*/false);
      const double mse = HistogramError(ErrorMethod::kMse, shifted, qe);
      if (mse < best) {
        best = mse;
        out.threshold = t;
        out.shift = s;
      }
    }
  }
  return out;
}

}  // namespace quantd::quantizers
