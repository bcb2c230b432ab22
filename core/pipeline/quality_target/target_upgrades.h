// The per-tensor bit upgrades the TPC allows a job (the quality-target
// search's moves): a node's output activation to the widest activation
// bits among its op set's candidates that keep its kernel bits and that
// every consumer accepts as input, and a kernel to the widest weights bits
// that keep its activation bits. Each move is priced in bytes: the tensor's
// elements (or the kernel's) times the added bits / 8.
#ifndef QUANTD_CORE_PIPELINE_QUALITY_TARGET_TARGET_UPGRADES_H_
#define QUANTD_CORE_PIPELINE_QUALITY_TARGET_TARGET_UPGRADES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/pipeline/job/job_state.h"
#include "core/pipeline/mixed_precision/mixed_precision_options.h"

namespace quantd {

struct BitUpgrade {
  int node = 0;
  std::string node_name;
  bool weights = false;  // else the output activation
  int from_bits = 0, to_bits = 0;
  double cost_bytes = 0;
  double gain_db = 0;  // estimated (the search fills it)
};

// In graph order, activation before weights. Nodes that a request's
// bit_width_overrides pin are left out.
std::vector<BitUpgrade> ListBitUpgrades(
    const JobState& state,
    const std::map<std::string, std::vector<int64_t>>& shapes,
    const MixedPrecisionOptions& user_options);

// One bit_width_override per upgrade (by node name).
MixedPrecisionOptions OverridesFor(const std::vector<BitUpgrade>& upgrades);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_QUALITY_TARGET_TARGET_UPGRADES_H_
