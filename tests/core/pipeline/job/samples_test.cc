// Bad samples give INVALID_ARGUMENT naming the sample index and input.
#include "core/pipeline/job/samples.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd {
namespace {

using ::testing::HasSubstr;

std::vector<ValueInfo> ModelInputs() {
  ValueInfo x;
  x.name = "x";
  x.dtype = DType::kFloat;
  x.shape = {-1, 3};
  x.has_shape = true;
  return {x};
}

v1::Sample MakeSample(const std::string& name, std::vector<float> values,
                      std::vector<int64_t> shape) {
  v1::Sample s;
  *s.add_inputs() =
      TensorToSampleProto(Tensor::FromVector<float>(values, shape), name);
  return s;
}

google::protobuf::RepeatedPtrField<v1::Sample> Samples(
    std::vector<v1::Sample> list) {
  google::protobuf::RepeatedPtrField<v1::Sample> out;
  for (auto& s : list) *out.Add() = s;
  return out;
}

std::string Error(const google::protobuf::RepeatedPtrField<v1::Sample>& s) {
  auto r = DecodeSamples(s, ModelInputs(), "calibration_samples", 1 << 20);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(r.status().message());
}

TEST(Samples, GoodSamplesDecodeWithDynamicBatch) {
  auto r = DecodeSamples(Samples({MakeSample("x", {1, 2, 3}, {1, 3}),
                                  MakeSample("x", {1, 2, 3, 4, 5, 6}, {2, 3})}),
                         ModelInputs(), "calibration_samples", 1 << 20);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[1].at("x").dim(0), 2);
}

TEST(Samples, WrongShapeNamesSampleAndInput) {
  EXPECT_THAT(Error(Samples({MakeSample("x", {1, 2, 3}, {1, 3}),
                             MakeSample("x", {1, 2, 3, 4}, {1, 4})})),
              HasSubstr("calibration_samples[1] input 'x': dim 1 is 4"));
}

TEST(Samples, WrongDtypeIsRejected) {
  v1::Sample s;
  *s.add_inputs() =
      TensorToSampleProto(Tensor::FromVector<int32_t>({1, 2, 3}, {1, 3}), "x");
  EXPECT_THAT(Error(Samples({s})),
              HasSubstr("dtype int32, model expects float"));
}

TEST(Samples, NanIsRejected) {
  EXPECT_THAT(
      Error(Samples({MakeSample(
          "x", {1, std::numeric_limits<float>::quiet_NaN(), 3}, {1, 3})})),
      HasSubstr("calibration_samples[0] input 'x': element 1 is NaN"));
}

TEST(Samples, InfIsRejected) {
  EXPECT_THAT(
      Error(Samples({MakeSample(
          "x", {1, 2, std::numeric_limits<float>::infinity()}, {1, 3})})),
      HasSubstr("element 2 is infinite"));
}

TEST(Samples, MissingInputIsNamed) {
  v1::Sample empty;
  EXPECT_THAT(Error(Samples({empty})),
              HasSubstr("calibration_samples[0]: missing input 'x'"));
}

TEST(Samples, UnknownInputIsNamed) {
  EXPECT_THAT(Error(Samples({MakeSample("y", {1, 2, 3}, {1, 3})})),
              HasSubstr("input 'y': the model has no such input"));
}

TEST(Samples, RawDataSizeMustMatchDims) {
  v1::Sample s = MakeSample("x", {1, 2, 3}, {1, 3});
  s.mutable_inputs(0)->set_raw_data("abc");
  EXPECT_THAT(Error(Samples({s})), HasSubstr("raw_data has 3 bytes"));
}

TEST(Samples, HugeClaimedShapeIsRejectedBeforeAllocating) {
  v1::Sample s = MakeSample("x", {1, 2, 3}, {1, 3});
  s.mutable_inputs(0)->set_dims(0, int64_t{1} << 40);
  EXPECT_THAT(Error(Samples({s})), HasSubstr("exceeds the size limit"));
}

TEST(Samples, ValidateCountsTheLimit) {
  auto st = ValidateSampleProtos(Samples({MakeSample("x", {1, 2, 3}, {1, 3}),
                                          MakeSample("x", {1, 2, 3}, {1, 3})}),
                                 "calibration_samples", 1, 1 << 20);
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("2 samples, the limit is 1"));
}

// The admission check reads the bytes in place: it still names the first
// NaN of a float sample and the first infinity of a double one, and a
// raw_data of the wrong size.
TEST(Samples, ValidateNamesTheFirstNonFiniteElement) {
  const auto validate = [](const v1::Sample& s) {
    return std::string(
        ValidateSampleProtos(Samples({MakeSample("x", {1, 2, 3}, {1, 3}), s}),
                             "calibration_samples", 8, 1 << 20)
            .message());
  };
  EXPECT_THAT(
      validate(MakeSample("x", {1, std::numeric_limits<float>::quiet_NaN(), 3},
                          {1, 3})),
      HasSubstr("calibration_samples[1] input 'x': element 1 is NaN"));
  v1::Sample d;
  *d.add_inputs() = TensorToSampleProto(
      Tensor::FromVector<double>(
          {1, 2, 3, -std::numeric_limits<double>::infinity()}, {1, 4}),
      "x");
  EXPECT_THAT(validate(d), HasSubstr("element 3 is infinite"));
  v1::Sample bad = MakeSample("x", {1, 2, 3}, {1, 3});
  bad.mutable_inputs(0)->set_raw_data("abcd");
  EXPECT_THAT(validate(bad), HasSubstr("raw_data has 4 bytes"));
  EXPECT_EQ(validate(MakeSample("x", {4, 5, 6}, {1, 3})), "");
}

}  // namespace
}  // namespace quantd
