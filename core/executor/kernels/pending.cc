#include "core/executor/kernel.h"
namespace quantd::exec {
#define P(name) \
  void Register##name(KernelRegistry&) {}
P(Einsum)
}  // namespace quantd::exec
