#include "core/executor/kernel.h"
namespace quantd::exec {
#define P(name) \
  void Register##name(KernelRegistry&) {}
P(Rnn) P(Einsum)
}  // namespace quantd::exec
