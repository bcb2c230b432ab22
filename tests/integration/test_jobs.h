// Quantization requests for integration tests, built from small ONNX models
// (tests/data/onnx/model_builder.h) and deterministic sample data.
#ifndef QUANTD_TESTS_INTEGRATION_TEST_JOBS_H_
#define QUANTD_TESTS_INTEGRATION_TEST_JOBS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "quantd/v1/job.pb.h"
#include "quantd/v1/pruning.pb.h"

namespace quantd::testing {

// x[1,C,H,W] -> Conv(M filters, 3x3, pad 1) -> y on TPC imx500@4.0 with
// `samples` calibration samples.
v1::QuantizeRequest ConvJob(int64_t c, int64_t hw, int64_t m, int samples,
                            const std::string& request_id);
// x [1, C, hw, hw] (hw -1: dynamic) -> Conv 3x3 (`mid_channels`) -> Relu ->
// Conv 3x3 (`out_channels`) -> y, with deterministic weights in [-1, 1).
std::string TwoConvModel(int64_t in_channels, int64_t hw, int64_t mid_channels,
                         int64_t out_channels);
// x[1,3,H,W] (H, W dynamic) -> Conv 3x3 (`channels`) -> Relu -> Conv 3x3
// (`channels`) -> y, pruned to 60% of its weights on imx500@4.0 with LFH on
// one hw x hw sample.
v1::PruneRequest TwoConvPruneRequest(int64_t hw, int64_t channels = 64);
// Finishes in well under a second.
v1::QuantizeRequest SmallJob(const std::string& request_id);
// Runs for many seconds (300 calibration passes over a 96x96 conv and 300
// report passes); tests
// cancel it, never wait for it.
v1::QuantizeRequest LongJob(const std::string& request_id);

// `job` as the files quantctl reads: DIR/model.onnx and its calibration
// samples as the sample set DIR/calib (s0, s1, ...).
absl::Status WriteJobFiles(const v1::QuantizeRequest& job,
                           const std::string& dir);

}  // namespace quantd::testing

#endif  // QUANTD_TESTS_INTEGRATION_TEST_JOBS_H_
