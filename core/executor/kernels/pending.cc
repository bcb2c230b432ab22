#include "core/executor/kernel.h"
namespace quantd::exec {
#define P(name) \
  void Register##name(KernelRegistry&) {}
P(BatchNorm)
P(Softmax) P(Pool) P(GlobalPool) P(Resize) P(Concat) P(Split) P(Slice) P(Pad)
    P(ShapeOps) P(Transpose) P(Expand) P(Tile) P(Gather) P(Cast) P(Constant)
        P(Range) P(Reduce) P(ArgMinMax) P(Normalization) P(DepthSpace) P(If)
            P(Rnn) P(Quantize) P(Einsum)
}  // namespace quantd::exec
