// A Conv's gradients with respect to its kernel (and bias, input), in double
// as core/train's Conv2dBackward computes them, bit for bit: the same im2col
// patches, the same Eigen products (GroupedLinearBackward) and the same
// order of the col2im sums, but reading the float tensors directly, with the
// loops ordered for the caches and the temporaries in a reusable Scratch
// (the Hessian scores run this a hundred times per sample).
#ifndef QUANTD_CORE_AUTODIFF_CONV_BACKWARD_H_
#define QUANTD_CORE_AUTODIFF_CONV_BACKWARD_H_

#include "core/autodiff/scratch.h"
#include "core/train/conv2d.h"

namespace quantd::autodiff::internal {

// x [N, C, H, W], w [M, C/G, KH, KW], dy [N, M, OH, OW] (float). dx, dw, db
// (float, any may be null) are overwritten with Conv2dBackward's values
// rounded to float.
void ConvBackwardDouble(const train::ConvGeometry& g, const float* x,
                        const float* w, const float* dy, float* dx, float* dw,
                        float* db, Scratch* scratch);

}  // namespace quantd::autodiff::internal

#endif  // QUANTD_CORE_AUTODIFF_CONV_BACKWARD_H_
