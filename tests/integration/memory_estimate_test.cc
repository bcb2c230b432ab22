// EstimateJobMemoryBytes: the admission estimate counts the activations
// from the model's inferred shapes (docs/reliability.md, load test).
#include <cstdint>

#include "core/pipeline/job/quantize_job.h"
#include "gtest/gtest.h"
#include "tests/integration/test_jobs.h"

namespace quantd {
namespace {

constexpr int64_t kBase = int64_t{64} << 20;

// ConvJob(3, 8, 4, 4): x[1,3,8,8] -> Conv(4 filters, pad 1) -> y[1,4,8,8],
// 4 float samples. Samples: 4 x 3*8*8*4 = 3072 bytes, counted twice.
// Activations of one sample: y only (x is a graph input) = 4*8*8*4 = 1024
// bytes, counted twice per sample in flight.
TEST(EstimateJobMemoryBytes, CountsSamplesModelAndActivations) {
  const v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 4, "r");
  const int64_t model = static_cast<int64_t>(r.onnx_model().size());
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1),
            2 * 3072 + 5 * model + 2 * 1024 + kBase);
}

// The MCTQ export holds two more copies of the (float) weights.
TEST(EstimateJobMemoryBytes, MctqExportCountsTwoMoreModelCopies) {
  v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 4, "r");
  const int64_t model = static_cast<int64_t>(r.onnx_model().size());
  const int64_t qdq_only = EstimateJobMemoryBytes(r, JobLimits{}, 1);
  r.mutable_export_options()->add_formats(v1::EXPORT_FORMAT_MCTQ);
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1), qdq_only + 2 * model);
}

TEST(EstimateJobMemoryBytes, ActivationsScaleWithSamplesInFlight) {
  const v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 4, "r");
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 3) -
                EstimateJobMemoryBytes(r, JobLimits{}, 1),
            2 * 2 * 1024);
}

// No more samples are in flight than there are samples (4).
TEST(EstimateJobMemoryBytes, SamplesInFlightCappedBySampleCount) {
  const v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 4, "r");
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 64),
            EstimateJobMemoryBytes(r, JobLimits{}, 4));
}

// 64 filters on 96x96: one activation is 64*96*96*4 = 2359296 bytes.
TEST(EstimateJobMemoryBytes, LargeActivationsDominate) {
  const v1::QuantizeRequest r = testing::ConvJob(4, 96, 64, 2, "r");
  const int64_t model = static_cast<int64_t>(r.onnx_model().size());
  const int64_t samples = 2 * 4 * 96 * 96 * 4;
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 2),
            2 * samples + 5 * model + 2 * 2 * 2359296 + kBase);
}

// A model that does not parse adds no activations (the job fails at
// import); the estimate still covers the bytes sent.
TEST(EstimateJobMemoryBytes, UnparsableModelCountsOnlyItsBytes) {
  v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 1, "r");
  r.set_onnx_model("not a model");
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1),
            2 * 768 + 5 * 11 + kBase);
}

}  // namespace
}  // namespace quantd
