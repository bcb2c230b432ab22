// CheckEnumsAndNumbers, CheckRequestId and CheckNumThreads: what every job
// RPC refuses alike, with the field's path in the message.
#include "core/util/request_checks.h"

#include <cmath>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "quantd/v1/data_generation.pb.h"
#include "quantd/v1/job.pb.h"
#include "quantd/v1/pruning.pb.h"

namespace quantd {
namespace {

using ::testing::HasSubstr;

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(CheckEnumsAndNumbersTest, UndefinedEnumNamesTheFieldPath) {
  v1::QuantizeRequest r;
  v1::BitWidthOverride* o =
      r.mutable_mixed_precision()->add_bit_width_overrides();
  o->mutable_filter()->set_node_type("Conv");
  o->set_bits(4);
  o->set_target(static_cast<v1::BitWidthOverride::Target>(9));
  const absl::Status st = CheckEnumsAndNumbers(r);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "mixed_precision.bit_width_overrides[0].target: 9 is not a value "
            "of quantd.v1.BitWidthOverride.Target");
}

TEST(CheckEnumsAndNumbersTest, UndefinedTopLevelEnumOfANestedConfig) {
  v1::QuantizeRequest r;
  r.mutable_mixed_precision()->set_distance_weighting_method(
      static_cast<v1::DistanceWeighting>(99));
  EXPECT_THAT(CheckEnumsAndNumbers(r).message(),
              HasSubstr("mixed_precision.distance_weighting_method: 99"));
}

TEST(CheckEnumsAndNumbersTest, NonFiniteNumbersAreRefusedWhereverTheyAre) {
  v1::QuantizeRequest target;
  target.mutable_quality_target()->set_value(std::nan(""));
  EXPECT_THAT(CheckEnumsAndNumbers(target).message(),
              HasSubstr("quality_target.value: nan is not a finite number"));

  v1::GenerateDataRequest images;
  images.add_input_min(0);
  images.add_input_min(-std::numeric_limits<float>::infinity());
  EXPECT_THAT(CheckEnumsAndNumbers(images).message(),
              HasSubstr("input_min[1]: -inf is not a finite number"));

  v1::PruneRequest prune;
  prune.mutable_quantize()->mutable_gptq()->set_learning_rate(kInf);
  EXPECT_THAT(CheckEnumsAndNumbers(prune).message(),
              HasSubstr("quantize.gptq.learning_rate: inf"));
}

// MCT's z_threshold is infinity when off: +inf is a setting, -inf is not.
TEST(CheckEnumsAndNumbersTest, PositiveInfinityOnlyWhereItMeansOff) {
  v1::QuantizeRequest r;
  r.mutable_quantization()->set_z_threshold(kInf);
  EXPECT_TRUE(CheckEnumsAndNumbers(r).ok());
  r.mutable_quantization()->set_z_threshold(-kInf);
  EXPECT_THAT(CheckEnumsAndNumbers(r).message(),
              HasSubstr("quantization.z_threshold: -inf"));
}

// Samples have their own checks (dtype, size, NaN in the bytes), and TPCs
// their own validation: neither is walked.
TEST(CheckEnumsAndNumbersTest, SamplesAndTpcsAreLeftToTheirOwnChecks) {
  v1::QuantizeRequest r;
  r.add_calibration_samples()->add_inputs()->set_data_type(
      static_cast<v1::DataType>(77));
  r.mutable_tpc()->mutable_inline_tpc()->mutable_default_qco();
  EXPECT_TRUE(CheckEnumsAndNumbers(r).ok());
}

TEST(CheckRequestIdTest, AtMost128Characters) {
  EXPECT_TRUE(CheckRequestId(std::string(128, 'a')).ok());
  const absl::Status st = CheckRequestId(std::string(100000, 'a'));
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "request_id: 100000 characters, at most 128");
}

TEST(CheckNumThreadsTest, ZeroToTheLimit) {
  EXPECT_TRUE(CheckNumThreads(0, "num_threads").ok());
  EXPECT_TRUE(CheckNumThreads(1024, "num_threads").ok());
  EXPECT_EQ(CheckNumThreads(-5, "num_threads").message(),
            "num_threads: -5 is not in [0, 1024] (0: the server's default)");
  EXPECT_FALSE(CheckNumThreads(1025, "quantize.num_threads").ok());
}

}  // namespace
}  // namespace quantd
