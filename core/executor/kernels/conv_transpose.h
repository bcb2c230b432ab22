// What the ConvTranspose kernel resolves from a node's attributes, for the
// backward pass (core/autodiff) to be the exact adjoint of the forward.
#ifndef QUANTD_CORE_EXECUTOR_KERNELS_CONV_TRANSPOSE_H_
#define QUANTD_CORE_EXECUTOR_KERNELS_CONV_TRANSPOSE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"

namespace quantd::exec {

// Per spatial axis: the un-cropped result full = s(in-1) + (k-1)d + 1, the
// output's size and the full index of output index 0. Output index i holds
// full[i + begin] plus the bias, or the bias alone outside [0, full) (an
// output padding, or an output_shape larger than full).
struct ConvTransposeAxes {
  std::vector<int64_t> full, out, begin;
};

// The axes the kernel computes for `node` (pads, auto_pad, strides,
// dilations, output_padding, output_shape) on an input and weight of these
// shapes; INVALID_ARGUMENT naming the attribute at fault.
absl::StatusOr<ConvTransposeAxes> ConvTransposeOutputAxes(
    const Node& node, const std::vector<int64_t>& x_shape,
    const std::vector<int64_t>& w_shape);

}  // namespace quantd::exec

#endif  // QUANTD_CORE_EXECUTOR_KERNELS_CONV_TRANSPOSE_H_
