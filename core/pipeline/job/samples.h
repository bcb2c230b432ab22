// Sample tensors of a request: proto <-> Tensor, and the checks that make a
// bad sample an INVALID_ARGUMENT naming the sample and input instead of a
// crash or a silently wrong calibration.
#ifndef QUANTD_CORE_PIPELINE_JOB_SAMPLES_H_
#define QUANTD_CORE_PIPELINE_JOB_SAMPLES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"
#include "google/protobuf/repeated_field.h"
#include "quantd/v1/tensor.pb.h"

namespace quantd {

using SampleFeeds = std::map<std::string, Tensor>;

// v1::Tensor -> Tensor: known dtype, non-negative dims, raw_data size equal
// to the element count times the element size (checked before allocating);
// 4-bit types are not accepted as samples. `what` prefixes errors.
absl::StatusOr<Tensor> TensorFromSampleProto(const v1::Tensor& proto,
                                             absl::string_view what,
                                             int64_t max_bytes);
v1::Tensor TensorToSampleProto(const Tensor& tensor, const std::string& name);

// Cheap, model-free checks of a sample list (the server's admission check):
// decodable tensors, no NaN/Inf in float inputs, no duplicate input names,
// total bytes within `max_total_bytes`. `field` is the request field name.
absl::Status ValidateSampleProtos(
    const google::protobuf::RepeatedPtrField<v1::Sample>& samples,
    absl::string_view field, int64_t max_samples, int64_t max_total_bytes);

// Decodes and checks samples against the model's graph inputs: every input
// present (none unknown), dtype equal, rank equal, static dims equal.
// Errors: `calibration_samples[3] input 'x': dim 1 is 4, model expects 3`.
absl::StatusOr<std::vector<SampleFeeds>> DecodeSamples(
    const google::protobuf::RepeatedPtrField<v1::Sample>& samples,
    const std::vector<ValueInfo>& model_inputs, absl::string_view field,
    int64_t max_total_bytes);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_JOB_SAMPLES_H_
