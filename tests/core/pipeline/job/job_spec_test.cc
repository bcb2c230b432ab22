// The job spec: each option of a request resolved once, defaults applied
// as job.proto documents them, errors naming the field.
#include "core/pipeline/job/job_spec.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/pipeline/gptq/gptq_options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd {
namespace {

using ::testing::HasSubstr;

absl::Status ErrorOf(const v1::QuantizeRequest& r) {
  return ResolveJobSpec(r).status();
}

TEST(JobSpec, AnEmptyRequestTakesTheDocumentedDefaults) {
  absl::StatusOr<JobSpec> spec = ResolveJobSpec(v1::QuantizeRequest());
  ASSERT_TRUE(spec.ok()) << spec.status();
  // job.proto: MSE both ways, bias and shift-negative correction on.
  EXPECT_EQ(spec->ptq.activation_error_method, quantizers::ErrorMethod::kMse);
  EXPECT_EQ(spec->ptq.weights_error_method, quantizers::ErrorMethod::kMse);
  EXPECT_TRUE(spec->ptq.weights_bias_correction);
  EXPECT_TRUE(spec->ptq.shift_negative_activation_correction);
  EXPECT_FALSE(spec->data_channel_equalization_set);
  // Empty formats: QDQ only, int8 storage.
  EXPECT_TRUE(spec->export_options.qdq);
  EXPECT_FALSE(spec->export_options.mctq);
  EXPECT_EQ(spec->export_options.activation_storage, ActivationStorage::kInt8);
  EXPECT_EQ(spec->export_options.weight_storage, WeightStorage::kInt8);
  // MCT's mixed-precision defaults: 32 images, epsilon 1e-6, refinement on.
  EXPECT_FALSE(spec->mixed_precision.Requested());
  EXPECT_EQ(spec->mixed_precision.num_of_images, 32);
  EXPECT_EQ(spec->mixed_precision.metric_epsilon, 1e-6);
  EXPECT_EQ(spec->mixed_precision.exp_distance_weighting_sigma, 0.1);
  EXPECT_TRUE(spec->mixed_precision.refine_solution);
  EXPECT_FALSE(spec->target.has_value());
  EXPECT_FALSE(spec->GptqMayRun());
  EXPECT_FALSE(spec->gptq.has_value());
  EXPECT_EQ(spec->report_samples, 16);
  EXPECT_FALSE(spec->generate.has_value());
  EXPECT_EQ(spec->options_text, "");
}

TEST(JobSpec, MixedPrecisionTargetsAndOverridesBecomePlainOptions) {
  v1::QuantizeRequest r;
  v1::MixedPrecisionConfig& mp = *r.mutable_mixed_precision();
  mp.mutable_target()->set_weights_memory_bytes(1000);
  mp.mutable_target_fraction()->set_weights_memory_bytes(0.75);
  mp.set_num_of_images(8);
  mp.set_refine_mp_solution(false);
  mp.set_distance_weighting_method(v1::DISTANCE_WEIGHTING_EXP);
  v1::BitWidthOverride& o = *mp.add_bit_width_overrides();
  o.mutable_filter()->set_name_scope("backbone/");
  o.set_target(v1::BitWidthOverride::TARGET_ACTIVATION);
  o.set_bits(16);
  absl::StatusOr<JobSpec> spec = ResolveJobSpec(r);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const MixedPrecisionOptions& m = spec->mixed_precision;
  EXPECT_TRUE(m.Requested());
  EXPECT_TRUE(m.Searches());
  EXPECT_TRUE(m.SearchesWeightsOnly());
  EXPECT_EQ(m.target.weights_memory_bytes, 1000);
  EXPECT_EQ(m.target_fraction.weights_memory_bytes, 0.75);
  EXPECT_FALSE(m.target.bops.has_value());
  EXPECT_EQ(m.num_of_images, 8);
  EXPECT_FALSE(m.refine_solution);
  EXPECT_EQ(m.weighting, mixed_precision::DistanceWeighting::kExp);
  ASSERT_EQ(m.overrides.size(), 1u);
  EXPECT_EQ(m.overrides[0].filter.by, NodeFilter::By::kScope);
  EXPECT_EQ(m.overrides[0].filter.value, "backbone/");
  EXPECT_FALSE(m.overrides[0].weights);
  EXPECT_EQ(m.overrides[0].bits, 16);
  // A total target makes it more than a weights search.
  r.mutable_mixed_precision()->mutable_target()->set_total_memory_bytes(5000);
  EXPECT_FALSE(ResolveJobSpec(r)->mixed_precision.SearchesWeightsOnly());
  // The report echoes what was asked.
  EXPECT_THAT(spec->options_text, HasSubstr("mixed_precision {"));
}

TEST(JobSpec, ExportFormatsAndSkipQdq) {
  v1::QuantizeRequest r;
  r.mutable_export_options()->add_formats(v1::EXPORT_FORMAT_MCTQ);
  EXPECT_FALSE(ResolveJobSpec(r)->export_options.qdq);
  EXPECT_TRUE(ResolveJobSpec(r)->export_options.mctq);
  r.mutable_export_options()->add_formats(v1::EXPORT_FORMAT_QDQ);
  EXPECT_TRUE(ResolveJobSpec(r)->export_options.qdq);
  r.mutable_export_options()->set_skip_qdq_onnx(true);
  EXPECT_FALSE(ResolveJobSpec(r)->export_options.qdq);
  r.mutable_export_options()->set_activation_storage(
      v1::ACTIVATION_STORAGE_AUTO);
  r.mutable_export_options()->set_weight_storage(v1::WEIGHT_STORAGE_UINT8);
  EXPECT_EQ(ResolveJobSpec(r)->export_options.activation_storage,
            ActivationStorage::kAuto);
  EXPECT_EQ(ResolveJobSpec(r)->export_options.weight_storage,
            WeightStorage::kUint8);
  r.mutable_export_options()->add_formats(static_cast<v1::ExportFormat>(7));
  EXPECT_THAT(std::string(ErrorOf(r).message()),
              HasSubstr("export_options.formats[2]: 7 is not a format"));
}

TEST(JobSpec, AQualityTargetTriesGptqUnlessSkippedOrEnabled) {
  v1::QuantizeRequest r;
  r.mutable_quality_target()->set_value(30);
  absl::StatusOr<JobSpec> spec = ResolveJobSpec(r);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->target->metric, QualityTargetOptions::Metric::kSqnr);
  EXPECT_EQ(spec->target->value, 30);
  EXPECT_TRUE(spec->TargetTriesGptq());
  ASSERT_TRUE(spec->gptq.has_value());  // the trial's epochs, else MCT's
  EXPECT_EQ(spec->gptq->n_epochs, kTargetGptqEpochs);
  EXPECT_EQ(spec->gptq->rows_per_block, GptqOptions{}.rows_per_block);
  r.mutable_gptq()->set_n_epochs(3);  // the request's own, as asked
  EXPECT_EQ(ResolveJobSpec(r)->gptq->n_epochs, 3);
  r.mutable_gptq()->clear_n_epochs();
  r.mutable_gptq()->set_enabled(true);  // GPTQ itself: MCT's 5
  EXPECT_EQ(ResolveJobSpec(r)->gptq->n_epochs, 5);
  r.mutable_gptq()->set_enabled(false);
  r.mutable_quality_target()->set_skip_gptq(true);
  EXPECT_FALSE(ResolveJobSpec(r)->GptqMayRun());
  EXPECT_FALSE(ResolveJobSpec(r)->gptq.has_value());
  r.mutable_gptq()->set_enabled(true);
  EXPECT_FALSE(ResolveJobSpec(r)->TargetTriesGptq());
  EXPECT_TRUE(ResolveJobSpec(r)->GptqMayRun());
  r.mutable_quality_target()->set_metric(v1::QualityTarget::METRIC_COSINE);
  EXPECT_THAT(std::string(ErrorOf(r).message()),
              HasSubstr("quality_target.value: a cosine target must be in "
                        "(-1, 1], got 30"));
}

TEST(JobSpec, EachBadOptionIsNamed) {
  struct Case {
    void (*set)(v1::QuantizeRequest*);
    absl::StatusCode code;
    const char* field;
  };
  const Case cases[] = {
      {[](v1::QuantizeRequest* r) { r->set_report_samples(-2); },
       absl::StatusCode::kInvalidArgument, "report_samples:"},
      {[](v1::QuantizeRequest* r) {
         r->mutable_quality_target()->set_value(
             std::numeric_limits<double>::quiet_NaN());
       },
       absl::StatusCode::kInvalidArgument, "quality_target.value:"},
      {[](v1::QuantizeRequest* r) {
         r->mutable_mixed_precision()->set_num_interest_points_factor(2);
       },
       absl::StatusCode::kInvalidArgument,
       "mixed_precision.num_interest_points_factor: 2"},
      {[](v1::QuantizeRequest* r) {
         r->mutable_mixed_precision()->mutable_target()->set_bops(-1);
       },
       absl::StatusCode::kInvalidArgument, "mixed_precision.target.bops: -1"},
      {[](v1::QuantizeRequest* r) {
         r->mutable_mixed_precision()
             ->mutable_target_fraction()
             ->set_total_memory_bytes(0);
       },
       absl::StatusCode::kInvalidArgument,
       "mixed_precision.target_fraction.total_memory_bytes: 0"},
      {[](v1::QuantizeRequest* r) {
         v1::BitWidthOverride* o =
             r->mutable_mixed_precision()->add_bit_width_overrides();
         o->mutable_filter()->set_node_type("Conv");
         o->set_target(v1::BitWidthOverride::TARGET_WEIGHTS);
       },
       absl::StatusCode::kInvalidArgument,
       "mixed_precision.bit_width_overrides[0].bits: 0"},
      {[](v1::QuantizeRequest* r) {
         r->mutable_mixed_precision()->set_distance_weighting_method(
             v1::DISTANCE_WEIGHTING_HESSIAN);
       },
       absl::StatusCode::kUnimplemented,
       "mixed_precision.distance_weighting_method: HESSIAN"},
      {[](v1::QuantizeRequest* r) {
         r->mutable_mixed_precision()->set_kernel_weights_bits(17);
       },
       absl::StatusCode::kInvalidArgument,
       "mixed_precision.kernel_weights_bits: 17"},
      {[](v1::QuantizeRequest* r) {
         r->mutable_quantization()->set_weights_second_moment_correction(true);
       },
       absl::StatusCode::kUnimplemented,
       "quantization.weights_second_moment_correction"},
      {[](v1::QuantizeRequest* r) {
         r->mutable_gptq()->set_enabled(true);
         r->mutable_gptq()->set_n_epochs(-1);
       },
       absl::StatusCode::kInvalidArgument, "gptq.n_epochs"},
  };
  for (const Case& c : cases) {
    v1::QuantizeRequest r;
    c.set(&r);
    const absl::Status st = ErrorOf(r);
    EXPECT_EQ(st.code(), c.code) << st;
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.field));
  }
}

TEST(JobSpec, ReportSamplesCount) {
  v1::QuantizeRequest r;
  r.set_report_samples(-1);
  EXPECT_EQ(ResolveJobSpec(r)->report_samples, -1);
  r.set_report_samples(5);
  EXPECT_EQ(ResolveJobSpec(r)->report_samples, 5);
}

}  // namespace
}  // namespace quantd
