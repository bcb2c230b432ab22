// Sliding-window geometry shared by Conv, ConvTranspose and pooling:
// attribute parsing, auto_pad and the output size formula.
#ifndef QUANTD_CORE_EXECUTOR_WINDOW_H_
#define QUANTD_CORE_EXECUTOR_WINDOW_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"

namespace quantd::exec {

enum class AutoPad { kNotSet, kValid, kSameUpper, kSameLower };

struct WindowAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel_shape;  // empty: from the weight
  std::vector<int64_t> strides;       // empty: all 1
  std::vector<int64_t> dilations;     // empty: all 1
  std::vector<int64_t> pads;          // [b1..bn, e1..en]; empty: all 0
  bool ceil_mode = false;
};

// Reads and validates auto_pad, kernel_shape, strides, dilations, pads,
// ceil_mode (values must be positive / non-negative).
absl::StatusOr<WindowAttrs> ReadWindowAttrs(const Node& node);

struct WindowGeometry {
  std::vector<int64_t> in, kernel, stride, dilation, pad_begin, pad_end, out;
  int rank() const { return static_cast<int>(in.size()); }
};

// out = floor((in + pb + pe - ((k-1)d+1)) / s) + 1 (ceil with ceil_mode, a
// window starting inside the end padding dropped); SAME: out = ceil(in / s),
// odd total padding at the end (UPPER) or beginning (LOWER).
absl::StatusOr<WindowGeometry> ComputeWindow(
    const WindowAttrs& attrs, const std::vector<int64_t>& in,
    const std::vector<int64_t>& kernel);

// For output position `o` (flat, row-major) of window `w`, each tap's
// input position (flat within one plane) in kernel order, or -1 outside the
// input; `padded[t]` (may be null): inside the padded input. What a direct
// loop over the window needs: the backward passes over three or more axes,
// GPTQ's patches of such a Conv.
void WindowTaps(const WindowGeometry& w, int64_t o, std::vector<int64_t>* index,
                std::vector<char>* padded = nullptr);

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_WINDOW_H_
