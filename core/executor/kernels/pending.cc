#include "core/executor/kernel.h"
namespace quantd::exec {
#define P(name) \
  void Register##name(KernelRegistry&) {}
P(Resize) P(If) P(Rnn) P(Quantize) P(Einsum)
}  // namespace quantd::exec
