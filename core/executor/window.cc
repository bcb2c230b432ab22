#include "core/executor/window.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/executor/kernel_util.h"

namespace quantd::exec {

absl::StatusOr<WindowAttrs> ReadWindowAttrs(const Node& node) {
  WindowAttrs a;
  const std::string pad = node.GetString("auto_pad", "NOTSET");
  if (pad == "NOTSET" || pad.empty()) {
    a.auto_pad = AutoPad::kNotSet;
  } else if (pad == "VALID") {
    a.auto_pad = AutoPad::kValid;
  } else if (pad == "SAME_UPPER") {
    a.auto_pad = AutoPad::kSameUpper;
  } else if (pad == "SAME_LOWER") {
    a.auto_pad = AutoPad::kSameLower;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(node.Label(), ": unknown auto_pad '", pad, "'"));
  }
  a.kernel_shape = node.GetInts("kernel_shape");
  a.strides = node.GetInts("strides");
  a.dilations = node.GetInts("dilations");
  a.pads = node.GetInts("pads");
  a.ceil_mode = node.GetInt("ceil_mode", 0) != 0;
  for (int64_t v : a.kernel_shape) {
    if (v <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(node.Label(), ": kernel_shape must be positive"));
    }
  }
  for (const auto* list : {&a.strides, &a.dilations}) {
    for (int64_t v : *list) {
      if (v <= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            node.Label(), ": strides and dilations must be positive"));
      }
    }
  }
  for (int64_t v : a.pads) {
    if (v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(node.Label(), ": pads must be non-negative"));
    }
  }
  return a;
}

absl::StatusOr<WindowGeometry> ComputeWindow(
    const WindowAttrs& a, const std::vector<int64_t>& in,
    const std::vector<int64_t>& kernel) {
  const size_t n = in.size();
  auto check_len = [&](const std::vector<int64_t>& v, size_t want,
                       const char* what) -> absl::Status {
    if (!v.empty() && v.size() != want) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " has ", v.size(), " values, expected ", want));
    }
    return absl::OkStatus();
  };
  if (kernel.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel has ", kernel.size(), " spatial dims, input has ", n));
  }
  for (auto s : {check_len(a.strides, n, "strides"),
                 check_len(a.dilations, n, "dilations"),
                 check_len(a.pads, 2 * n, "pads")}) {
    if (!s.ok()) return s;
  }
  WindowGeometry g;
  g.in = in;
  g.kernel = kernel;
  g.stride = a.strides.empty() ? std::vector<int64_t>(n, 1) : a.strides;
  g.dilation = a.dilations.empty() ? std::vector<int64_t>(n, 1) : a.dilations;
  g.pad_begin.assign(n, 0);
  g.pad_end.assign(n, 0);
  g.out.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t ext = (kernel[i] - 1) * g.dilation[i] + 1;
    const int64_t s = g.stride[i];
    if (a.auto_pad == AutoPad::kSameUpper ||
        a.auto_pad == AutoPad::kSameLower) {
      g.out[i] = (in[i] + s - 1) / s;
      const int64_t total =
          std::max<int64_t>(0, (g.out[i] - 1) * s + ext - in[i]);
      const int64_t small = total / 2;
      g.pad_begin[i] =
          a.auto_pad == AutoPad::kSameUpper ? small : total - small;
      g.pad_end[i] = total - g.pad_begin[i];
      continue;
    }
    if (a.auto_pad == AutoPad::kNotSet && !a.pads.empty()) {
      g.pad_begin[i] = a.pads[i];
      g.pad_end[i] = a.pads[i + n];
    }
    const int64_t span = in[i] + g.pad_begin[i] + g.pad_end[i] - ext;
    if (span < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "window of extent ", ext, " does not fit input dim ", in[i],
          " with pads ", g.pad_begin[i], "+", g.pad_end[i]));
    }
    if (a.ceil_mode) {
      g.out[i] = (span + s - 1) / s + 1;
      // The last window must start inside the input or the begin padding.
      if ((g.out[i] - 1) * s >= in[i] + g.pad_begin[i]) --g.out[i];
    } else {
      g.out[i] = span / s + 1;
    }
  }
  return g;
}

void WindowTaps(const WindowGeometry& w, int64_t o, std::vector<int64_t>* index,
                std::vector<char>* padded) {
  const int r = w.rank();
  std::vector<int64_t> oc(r), kc(r, 0);
  for (int d = r - 1; d >= 0; --d) {
    oc[d] = o % w.out[d];
    o /= w.out[d];
  }
  int64_t taps = 1;
  for (int64_t k : w.kernel) taps *= k;
  index->resize(taps);
  if (padded != nullptr) padded->resize(taps);
  for (int64_t t = 0; t < taps; ++t) {
    int64_t flat = 0;
    bool inside = true, in_pad = true;
    for (int d = 0; d < r; ++d) {
      const int64_t i =
          oc[d] * w.stride[d] - w.pad_begin[d] + kc[d] * w.dilation[d];
      inside = inside && i >= 0 && i < w.in[d];
      in_pad = in_pad && i >= -w.pad_begin[d] && i < w.in[d] + w.pad_end[d];
      flat = flat * w.in[d] + i;
    }
    (*index)[t] = inside ? flat : -1;
    if (padded != nullptr) (*padded)[t] = in_pad;
    for (int d = r - 1; d >= 0; --d) {  // next tap, row-major
      if (++kc[d] < w.kernel[d]) break;
      kc[d] = 0;
    }
  }
}

}  // namespace quantd::exec
