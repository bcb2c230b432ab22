// A model's resource figures as mixed precision measures them (MCT's
// ResourceUtilization): what a target asks for, what an allocation costs.
// The report prints them; it does not define them.
#ifndef QUANTD_CORE_MIXED_PRECISION_RESOURCE_FIGURES_H_
#define QUANTD_CORE_MIXED_PRECISION_RESOURCE_FIGURES_H_

#include <optional>

namespace quantd::mixed_precision {

// Bytes and bit-operations; unset = not given (targets) / not applicable.
struct ResourceFigures {
  std::optional<double> weights_memory_bytes;
  std::optional<double> activation_memory_bytes;
  std::optional<double> total_memory_bytes;
  std::optional<double> bops;
};

}  // namespace quantd::mixed_precision

#endif  // QUANTD_CORE_MIXED_PRECISION_RESOURCE_FIGURES_H_
