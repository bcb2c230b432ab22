// Text forms of the mixed-precision request fields, shared by the command
// line (`quantctl quantize --mp ... --bits-override ...`) and batch
// manifests.
//
//   targets:   KEY=VALUE[,KEY=VALUE...]
//              weights|activation|total|bops = fraction (> 0) of the 8-bit
//              figure; weights_bytes|activation_bytes|total_bytes = bytes,
//              bops_count = bit-operations (absolute, >= 0). A fraction and
//              an absolute value for the same resource may both be given:
//              the job takes the smaller.
//   overrides: FILTER[@weights|@activation]=BITS[,...]
//              FILTER = type:OP_TYPE | name:NODE_NAME | scope:SUBSTRING;
//              the target defaults to the weights (kernel), e.g.
//              "type:Conv=4,name:conv_3=2,scope:head@activation=16".
#ifndef QUANTD_CLIENTS_BATCH_MIXED_PRECISION_FLAGS_H_
#define QUANTD_CLIENTS_BATCH_MIXED_PRECISION_FLAGS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "quantd/v1/job.pb.h"

namespace quantd {

// Sets mp->target / mp->target_fraction fields. Errors quote the bad item.
absl::Status ParseMixedPrecisionTargets(absl::string_view spec,
                                        v1::MixedPrecisionConfig* mp);

// Appends one BitWidthOverride per item.
absl::Status ParseBitWidthOverrides(absl::string_view spec,
                                    v1::MixedPrecisionConfig* mp);

// `--keep-float FILTER[,FILTER...]` (FILTER as in overrides): appends one
// QuantizationConfig.keep_float filter per item.
absl::Status ParseKeepFloat(absl::string_view spec,
                            v1::QuantizationConfig* config);

}  // namespace quantd

#endif  // QUANTD_CLIENTS_BATCH_MIXED_PRECISION_FLAGS_H_
