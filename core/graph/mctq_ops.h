// The custom quantizer ops of Sony's mct_quantizers (v1.5.2), which MCT's
// MCTQ ONNX export writes in the domain "mct_quantizers". The graph IR
// accepts exactly these ops outside the default domain; each has one output
// of the type and shape of input 0 (docs/pipeline.md, "Export formats").
#ifndef QUANTD_CORE_GRAPH_MCTQ_OPS_H_
#define QUANTD_CORE_GRAPH_MCTQ_OPS_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace quantd {

inline constexpr absl::string_view kMctqDomain = "mct_quantizers";
// The opset version of kMctqDomain that MCT's export imports.
inline constexpr int64_t kMctqOpsetVersion = 1;
// The `mctq_version` attribute every op carries.
inline constexpr absl::string_view kMctqVersion = "1.5.2";

inline constexpr absl::string_view kActivationPotQuantizer =
    "ActivationPOTQuantizer";
inline constexpr absl::string_view kActivationSymmetricQuantizer =
    "ActivationSymmetricQuantizer";
inline constexpr absl::string_view kActivationUniformQuantizer =
    "ActivationUniformQuantizer";
inline constexpr absl::string_view kWeightsPotQuantizer = "WeightsPOTQuantizer";
inline constexpr absl::string_view kWeightsSymmetricQuantizer =
    "WeightsSymmetricQuantizer";
inline constexpr absl::string_view kWeightsUniformQuantizer =
    "WeightsUniformQuantizer";
inline constexpr absl::string_view kWeightsLutPotQuantizer =
    "WeightsLUTPOTQuantizer";
inline constexpr absl::string_view kWeightsLutSymmetricQuantizer =
    "WeightsLUTSymmetricQuantizer";

// True for one of the eight ops above in kMctqDomain.
bool IsMctqQuantizerOp(absl::string_view domain, absl::string_view op_type);

// The executor's registry key of a non-default-domain op: "domain::op_type".
std::string QualifiedOpType(absl::string_view domain,
                            absl::string_view op_type);

}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_MCTQ_OPS_H_
