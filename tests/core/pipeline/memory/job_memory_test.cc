// The memory model (core/pipeline/memory/job_memory.h): each job kind's
// estimate re-derived by hand from the model's inferred shapes and the
// documented terms (docs/service.md, the admission estimate).
#include "core/pipeline/memory/job_memory.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/pipeline/job/preflight.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/tpc/registry.h"
#include "gtest/gtest.h"
#include "tests/data/onnx/model_builder.h"
#include "tests/integration/test_jobs.h"

namespace quantd {
namespace {

// The fixed part of every job's estimate.
constexpr int64_t kEstimateBase = int64_t{8} << 20;
// One histogram calibration keeps per histogrammed tensor and sample: 2048
// counts of 4 bytes and 192 bytes of map node and name.
constexpr int64_t kHistogram = 2048 * 4 + 192;

// The job's own input (shapes inferred, activations counted) for `r`, with
// the builtin TPCs.
absl::StatusOr<JobInput> Preflight(const v1::QuantizeRequest& r) {
  tpc::TpcRegistry registry;
  if (absl::Status s = registry.AddBuiltins(); !s.ok()) return s;
  return PreflightJob(r, registry, JobLimits());
}

// `samples` calibration samples x[1,4,hw,hw] for the model `b` builds.
v1::QuantizeRequest JobFor(const OnnxModelBuilder& b, int samples, int hw = 8) {
  v1::QuantizeRequest r = testing::ConvJob(4, hw, 4, samples, "r");
  r.set_onnx_model(b.Serialize());
  return r;
}

// ConvJob(3, 8, 4, 4): x[1,3,8,8] -> Conv(4 filters, pad 1) -> y[1,4,8,8],
// 4 float samples. Samples: 4 x 3*8*8*4 = 3072 bytes, counted twice (the
// request's parsed copy and the decoded feeds) less the request's own
// copy, which the server frees after the import: once. The model 9 times
// less that copy: 8. Activations of one sample: y only (x is a graph input)
// = 4*8*8*4 = 1024 bytes, all alive at once after the Conv (the live set);
// the first sample in flight counts its live set twice (the report's float
// and fake-quant sides): 2048. Calibration histograms x and y for each of
// the 4 samples: 8 x kHistogram. The report's 4 samples (all of them:
// fewer than 16) keep their activations from calibration: 4 x 1024 = 4096.
TEST(EstimateJobMemoryBytes, CountsSamplesModelAndActivations) {
  const v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 4, "r");
  const int64_t model = static_cast<int64_t>(r.onnx_model().size());
  auto input = Preflight(r);
  ASSERT_TRUE(input.ok()) << input.status();
  EXPECT_EQ(input->activations.histogrammed, 2);
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1),
            3072 + 8 * model + 2048 + 8 * kHistogram + 4096 + kEstimateBase);
}

// With evaluation samples sent nothing is kept from calibration.
TEST(EstimateJobMemoryBytes, EvaluationSamplesKeepNothingFromCalibration) {
  v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 4, "r");
  const int64_t kept = EstimateJobMemoryBytes(r, JobLimits{}, 1);
  *r.add_evaluation_samples() = r.calibration_samples(0);
  // One more sample sent (768 bytes twice: the server keeps the request's
  // evaluation samples), 4096 fewer kept.
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1), kept + 1536 - 4096);
}

// The kept values stop at the 64 MiB budget: 42 samples of 2359296 bytes of
// activations would keep 94.5 MiB; the 28 that fit whole keep 63 MiB.
TEST(EstimateJobMemoryBytes, KeptValuesStopAtTheBudget) {
  v1::QuantizeRequest r = testing::ConvJob(4, 96, 64, 2, "r");
  r.set_report_samples(-1);
  const int64_t two = EstimateJobMemoryBytes(r, JobLimits{}, 1);
  for (int i = 0; i < 40; ++i) {
    *r.add_calibration_samples() = r.calibration_samples(0);
  }
  // 40 more samples of 4*96*96*4 bytes, counted once, with their
  // histograms of x and y.
  const int64_t samples = int64_t{40} * (4 * 96 * 96 * 4 + 2 * kHistogram);
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1) - two,
            samples + 28 * 2359296 - 2 * 2359296);
}

// The MCTQ export holds two more copies of the (float) weights.
TEST(EstimateJobMemoryBytes, MctqExportCountsTwoMoreModelCopies) {
  v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 4, "r");
  const int64_t model = static_cast<int64_t>(r.onnx_model().size());
  const int64_t qdq_only = EstimateJobMemoryBytes(r, JobLimits{}, 1);
  r.mutable_export_options()->add_formats(v1::EXPORT_FORMAT_MCTQ);
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1), qdq_only + 2 * model);
}

// A quality target holds what calibration holds, and half of it again for
// the channel-equalization trial's second calibration (no
// data_channel_equalization set): 2048 live x2 + 8 x kHistogram = 69120,
// +34560. Its upgrade ranking's analysis caches (4 samples, 0.8 x 2 caches x
// 1024 bytes each + 0.1 x 1024 for the task: 6656) stay below that. GPTQ's
// trial is skipped here.
TEST(EstimateJobMemoryBytes, QualityTargetCountsTheEqualizationTrial) {
  v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 4, "r");
  const int64_t plain = EstimateJobMemoryBytes(r, JobLimits{}, 1);
  r.mutable_quality_target()->set_value(30);
  r.mutable_quality_target()->set_skip_gptq(true);
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1), plain + 34560);
  // With data_channel_equalization set either way there is no second
  // calibration.
  r.mutable_quantization()->set_data_channel_equalization(false);
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1), plain);
}

// GPTQ's stage up to a quality target trial's checkpoint (the first
// quarter of the blocks, rounded up: here the first of two) holds the
// first block's buffers, past it the widest. x[1,3,8,8] -> Conv(4) -> Relu
// -> Conv(64) -> y[1,64,8,8], 4 samples, rows_per_block = batch_rows = 4.
// The cache: two of the largest activation (y, 4096 floats) a sample:
// 2 x 4 x 4096 x 4 = 131072. The first Conv's buffers as derived above:
// 14048. The second's: patches 2 x 4 rows x 36 x 4 = 1152, targets 4 x 64
// x 4 = 1024, slices (4 + 4) x (36 + 4 x 64) x 8 = 18688, trainer 2304
// weights x 96 = 221184: 242048.
TEST(EstimateJobMemoryBytes, GptqCheckpointHoldsTheFirstQuartersBlocks) {
  v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 4, "r");
  r.set_onnx_model(testing::TwoConvModel(3, 8, 4, 64));
  r.mutable_gptq()->set_enabled(true);
  r.mutable_gptq()->set_rows_per_block(4);
  r.mutable_gptq()->set_batch_rows(4);
  auto input = Preflight(r);
  ASSERT_TRUE(input.ok()) << input.status();
  EXPECT_EQ(input->gptq_stage.checkpoint_block, 131072 + 14048);
  EXPECT_EQ(input->gptq_stage.block, 131072 + 242048);
  EXPECT_EQ(GptqCheckpointBlocks(2), 1);
  EXPECT_EQ(GptqCheckpointBlocks(47), 12);
}

// A target job's reservation as it reaches its parts: admitted as the
// plain job, plus the equalization trial's second calibration, then GPTQ's
// stage up to the checkpoint, then whole (EstimateJobMemoryBytes). A job
// without a target has one figure.
TEST(JobMemoryReservation, EachStageAddsWhatItsPartHolds) {
  v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 4, "r");
  r.set_onnx_model(testing::TwoConvModel(3, 8, 4, 64));
  auto plain_input = Preflight(r);
  ASSERT_TRUE(plain_input.ok()) << plain_input.status();
  const int64_t plain = EstimateJobMemoryBytes(*plain_input, 1);
  JobMemoryReservation none(*plain_input, 1);
  EXPECT_EQ(none.bytes(), plain);
  EXPECT_EQ(none.Reach(JobMemoryStage::kTargetGptqRest), plain);
  r.mutable_quality_target()->set_value(30);
  r.mutable_gptq()->set_rows_per_block(4);
  r.mutable_gptq()->set_batch_rows(4);
  auto input = Preflight(r);
  ASSERT_TRUE(input.ok()) << input.status();
  JobMemoryReservation reservation(*input, 1);
  EXPECT_EQ(reservation.whole(), EstimateJobMemoryBytes(*input, 1));
  EXPECT_EQ(reservation.bytes(), plain);
  const int64_t equalization =
      reservation.Reach(JobMemoryStage::kTargetEqualization);
  EXPECT_GT(equalization, plain);
  // Up to the checkpoint GPTQ holds less than calibration here; past it
  // the second Conv's buffers make it the peak.
  const int64_t checkpoint = reservation.Reach(JobMemoryStage::kTargetGptq);
  EXPECT_GE(checkpoint, equalization);
  const int64_t rest = reservation.Reach(JobMemoryStage::kTargetGptqRest);
  EXPECT_EQ(rest, reservation.whole());
  EXPECT_GT(rest, checkpoint);
  EXPECT_LE(rest - checkpoint,
            input->gptq_stage.block - input->gptq_stage.checkpoint_block);
  // The ranking, reached again, changes nothing; reached first, it alone.
  EXPECT_EQ(reservation.Reach(JobMemoryStage::kTargetRanking),
            reservation.whole());
  JobMemoryReservation ranking_only(*input, 1);
  EXPECT_GE(ranking_only.Reach(JobMemoryStage::kTargetRanking), plain);
  EXPECT_LT(ranking_only.bytes(), reservation.whole());
}

// The exact per-layer analysis holds a float and a fake-quant cache of
// every activation of one chunk of samples (here both samples: 256 MiB
// fits 56 of them), 0.8x each, and 0.1x a sample per sample in flight for
// its cone tasks: 0.8 x 2 x 2 x 2359296 + 0.1 x 2359296 = 7785676 (.8
// dropped), replacing calibration's 2 x 2359296 + 4 x kHistogram =
// 4752128. The estimate (the default on this Conv model, which has a
// backward pass) holds the float cache alone, the nodes' changes for one
// sample and 0.1x a sample per probe in flight: 0.8 x 2 x 2359296 + 0.8 x
// 2359296 + 0.1 x 2359296 = 5898240.
TEST(EstimateJobMemoryBytes, AnalysisCountsItsCaches) {
  v1::QuantizeRequest r = testing::ConvJob(4, 96, 64, 2, "r");
  const int64_t plain = EstimateJobMemoryBytes(r, JobLimits{}, 1);
  const int64_t calibration = 2 * 2359296 + 4 * kHistogram;
  r.set_sensitivity_analysis(true);
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1),
            plain + 5898240 - calibration);
  r.set_sensitivity_analysis_method(v1::SENSITIVITY_ANALYSIS_METHOD_EXACT);
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1),
            plain + 7785676 - calibration);
}

// Each sample in flight after the first adds 0.4x its activations:
// 1024 * 2/5 = 409 (409.6 rounded down).
TEST(EstimateJobMemoryBytes, ActivationsScaleWithSamplesInFlight) {
  const v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 4, "r");
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 3) -
                EstimateJobMemoryBytes(r, JobLimits{}, 1),
            2 * 409);
}

// A further sample in flight adds no more than 8x the live set: a chain of
// 64 Relus on x[1,4,8,8], every tensor 1024 bytes, sums to 65536 bytes
// (0.4x: 26214) with two alive at once (2048; 8x: 16384).
TEST(EstimateJobMemoryBytes, FurtherSamplesCountAtMostEightLiveSets) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 4, 8, 8});
  b.Output("r64", DType::kFloat, {1, 4, 8, 8}, true);
  for (int i = 1; i <= 64; ++i) {
    b.AddNode("Relu", {i == 1 ? "x" : absl::StrCat("r", i - 1)},
              {absl::StrCat("r", i)});
  }
  v1::QuantizeRequest r = JobFor(b, 4);
  auto input = Preflight(r);
  ASSERT_TRUE(input.ok()) << input.status();
  EXPECT_EQ(input->activations.total, 65536);
  EXPECT_EQ(input->activations.live, 2048);
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 3) -
                EstimateJobMemoryBytes(r, JobLimits{}, 1),
            2 * 16384);
}

// No more samples are in flight than there are samples (4).
TEST(EstimateJobMemoryBytes, SamplesInFlightCappedBySampleCount) {
  const v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 4, "r");
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 64),
            EstimateJobMemoryBytes(r, JobLimits{}, 4));
}

// 64 filters on 96x96: one activation is 64*96*96*4 = 2359296 bytes, the
// live set; two samples in flight: 2 x 2359296 = 4718592 for the first plus
// 2359296 * 2/5 = 943718 (.4 rounded down). Samples: 2 x 4*96*96*4 = 294912
// bytes, once, with 2 x 2 histograms. Both samples keep their activations
// for the report: 2 x 2359296.
TEST(EstimateJobMemoryBytes, LargeActivationsDominate) {
  const v1::QuantizeRequest r = testing::ConvJob(4, 96, 64, 2, "r");
  const int64_t model = static_cast<int64_t>(r.onnx_model().size());
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 2),
            294912 + 8 * model + 4718592 + 943718 + 4 * kHistogram +
                2 * 2359296 + kEstimateBase);
}

// Mixed precision's sensitivity runs after calibration: its float cache and
// running tasks replace calibration's activations when larger. The Conv's
// cone is the Conv: the cache keeps its input (x, a graph input: the
// sample's own buffer, 0 bytes) and its output (the graph's, compared):
// y[1,4,64,64], 65536 bytes a sample, for each of the 4 samples (one
// chunk): 262144; a running task 2 x 65536 = 131072; 393216 > calibration's
// 131072 + 8 histograms (67072). Samples: 4 x 3*64*64*4 = 196608, once.
// Nothing is kept for the report.
TEST(EstimateJobMemoryBytes, MixedPrecisionCountsTheSensitivity) {
  v1::QuantizeRequest r = testing::ConvJob(3, 64, 4, 4, "r");
  const int64_t model = static_cast<int64_t>(r.onnx_model().size());
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_weights_memory_bytes(0.75);
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1),
            196608 + 8 * model + 393216 + kEstimateBase);
  // Three tasks running: 262144 + 3 * 131072 (calibration: 131072 + 2 x
  // 26214 + 67072).
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 3),
            196608 + 8 * model + 262144 + 3 * 131072 + kEstimateBase);
}

// What the sensitivity's cache keeps, on x[1,4,8,8] -> Conv c1 ->
// BatchNormalization -> Relu -> a -> Conv c2 -> b -> b * Sigmoid(b) -> s ->
// Conv c3 -> y, every tensor 4*32*32*4 = 16384 bytes (7 of them: 114688).
// The kernels' outputs are no interest points (c1's through the
// BatchNormalization, which preparation folds, to its Relu; c2's swish,
// one fused activation once prepared: its Sigmoid's output is gone too); y
// is the graph's output. c1's cone keeps x (0 bytes: the sample's) and y;
// c2's a; c3's s: 49152. The prepared model's activations: all but c1 and
// g, 81920. Calibration histograms x, a, s and y (n1 and b are fused with
// their activations).
TEST(EstimateJobMemoryBytes, SensitivityCacheKeepsConeInputsAndPoints) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 4, 32, 32});
  b.Output("y", DType::kFloat, {1, 4, 32, 32}, true);
  const Tensor w =
      Tensor::FromVector<float>(std::vector<float>(16, 0.5f), {4, 4, 1, 1});
  const Tensor v = Tensor::FromVector<float>(std::vector<float>(4, 1.f), {4});
  for (const char* name : {"w1", "w2", "w3"}) b.Initializer(name, w);
  for (const char* name : {"scale", "bias", "mean", "var"}) {
    b.Initializer(name, v);
  }
  b.AddNode("Conv", {"x", "w1"}, {"c1"});
  b.AddNode("BatchNormalization", {"c1", "scale", "bias", "mean", "var"},
            {"n1"});
  b.AddNode("Relu", {"n1"}, {"a"});
  b.AddNode("Conv", {"a", "w2"}, {"b"});
  b.AddNode("Sigmoid", {"b"}, {"g"});
  b.AddNode("Mul", {"b", "g"}, {"s"});
  b.AddNode("Conv", {"s", "w3"}, {"y"});
  v1::QuantizeRequest r = JobFor(b, 1, 32);
  auto input = Preflight(r);
  ASSERT_TRUE(input.ok()) << input.status();
  EXPECT_EQ(input->activations.total, 114688);
  EXPECT_EQ(input->activations.sensitivity_kept, 49152);
  EXPECT_EQ(input->activations.prepared, 81920);
  EXPECT_EQ(input->activations.histogrammed, 4);
  // A weights target's estimate counts what the cache keeps of the one
  // sample; an activation target searches (nearly) every node, whose
  // cones' cache keeps every activation of the prepared graph (81920):
  // 32768 more.
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_weights_memory_bytes(0.75);
  const int64_t kernels = EstimateJobMemoryBytes(r, JobLimits{}, 1);
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_activation_memory_bytes(0.75);
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1) - kernels, 81920 - 49152);
}

// Cones cut at the first interest point (sensitivity_depth 1), on
// x[1,4,32,32] -> Conv c1 -> p1 -> Conv c2 -> p2 -> Conv c3 -> y, every
// tensor 16384 bytes. No kernel is fused, so p1, p2 and y are interest
// points (y is also the output). Whole cones: c1's makes p1, p2 and y
// (49152); cut, each cone is its kernel alone (16384). Either way the cache
// keeps p1, p2 and y: each cone's input and the points it makes.
TEST(EstimateJobMemoryBytes, CutConesCountOneKernelsOutputs) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 4, 32, 32});
  b.Output("y", DType::kFloat, {1, 4, 32, 32}, true);
  const Tensor w =
      Tensor::FromVector<float>(std::vector<float>(16, 0.5f), {4, 4, 1, 1});
  for (const char* name : {"w1", "w2", "w3"}) b.Initializer(name, w);
  b.AddNode("Conv", {"x", "w1"}, {"p1"});
  b.AddNode("Conv", {"p1", "w2"}, {"p2"});
  b.AddNode("Conv", {"p2", "w3"}, {"y"});
  v1::QuantizeRequest r = JobFor(b, 1, 32);
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_weights_memory_bytes(0.75);
  auto whole = Preflight(r);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->activations.sensitivity_kept, 49152);
  EXPECT_EQ(whole->activations.sensitivity_cone, 49152);
  const int64_t whole_estimate = EstimateJobMemoryBytes(r, JobLimits{}, 2);
  r.mutable_mixed_precision()->set_sensitivity_depth(1);
  auto cut = Preflight(r);
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_EQ(cut->activations.sensitivity_kept, 49152);
  EXPECT_EQ(cut->activations.sensitivity_cone, 16384);
  // Two tasks run at once, each one run of its cone: 2x the graph's live
  // set (two tensors, 32768) for a whole cone, 2x the cut cone (16384)
  // otherwise; or the float run that fills the cache (the one sample: 2x
  // the live set, 65536), whichever is larger. Whole: 131072; cut: 65536.
  const int64_t cut_estimate = EstimateJobMemoryBytes(r, JobLimits{}, 2);
  EXPECT_EQ(whole_estimate - cut_estimate, 131072 - 65536);
}

// Paddle's hard swish, x[1,4,32,32] -> Conv c1 -> h -> s = h * Clip(h + 3,
// 0, 6) / 6 -> Conv c2 (pads 1) -> y, every activation 16384 bytes.
// Preparation makes h + 3, the Clip and the product inner tensors of one
// HardSwish fused with c1: the prepared model's activations are h, s and y
// (49152); calibration histograms x, s and y. Shift-negative correction may
// shift s (an Add) and pad it for c2 (a Pad): two copies of s in the
// sensitivity's cache for the one sample, counted unless the request turns
// the correction off.
TEST(EstimateJobMemoryBytes, ShiftNegativeCopiesOfAHardSwish) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 4, 32, 32});
  b.Output("y", DType::kFloat, {1, 4, 32, 32}, true);
  b.Initializer("w1", Tensor::FromVector<float>(std::vector<float>(16, 0.5f),
                                                {4, 4, 1, 1}));
  b.Initializer("w2", Tensor::FromVector<float>(std::vector<float>(144, 0.1f),
                                                {4, 4, 3, 3}));
  for (auto [name, value] : {std::pair{"three", 3.f}, std::pair{"zero", 0.f},
                             std::pair{"six", 6.f}}) {
    b.Initializer(name, Tensor::FromVector<float>({value}, {}));
  }
  b.AddNode("Conv", {"x", "w1"}, {"h"});
  b.AddNode("Add", {"h", "three"}, {"p"});
  b.AddNode("Clip", {"p", "zero", "six"}, {"r"});
  b.AddNode("Mul", {"h", "r"}, {"m"});
  b.AddNode("Div", {"m", "six"}, {"s"});
  b.AddNode("Conv", {"s", "w2"}, {"y"}).Ints("pads", {1, 1, 1, 1});
  v1::QuantizeRequest r = JobFor(b, 1, 32);
  auto input = Preflight(r);
  ASSERT_TRUE(input.ok()) << input.status();
  EXPECT_EQ(input->activations.total, 6 * 16384);
  EXPECT_EQ(input->activations.prepared, 3 * 16384);
  EXPECT_EQ(input->activations.histogrammed, 3);
  EXPECT_EQ(input->activations.shift_negative, 2 * 16384);
  r.mutable_mixed_precision()
      ->mutable_target_fraction()
      ->set_weights_memory_bytes(0.75);
  const int64_t corrected = EstimateJobMemoryBytes(r, JobLimits{}, 1);
  r.mutable_quantization()->set_shift_negative_activation_correction(false);
  EXPECT_EQ(corrected - EstimateJobMemoryBytes(r, JobLimits{}, 1), 2 * 16384);
}

// GPTQ with HMSE weights: the hessian stage's peak replaces calibration's
// (the live set twice and 8 histograms) when larger. Weights counted as
// model/4 floats w; one running sample holds its tape and gradients (2 x
// 1024) and the kernel gradients (4w), the round of 4 samples its estimates
// (4 x 8w), then the double sum and float scores (12w). Here the scores
// stay below the block (one kernel: its trainer's 96 bytes a weight beat
// the scores' 48); HessianScoresOfManyKernelsAreThePeak has them above.
TEST(EstimateJobMemoryBytes, HmseCountsTheHessianScores) {
  v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 4, "r");
  r.mutable_gptq()->set_enabled(true);  // nothing kept for the report
  // GPTQ's stage (gptq_memory.h), kept small by 4 rows a block so that the
  // Hessian term shows: the conv's 4 x 4 targets floats (64), then the
  // larger of the targets' float pass (the sample in flight, 2048: the
  // histograms have merged) and the inputs cache (two of the largest
  // activation, 4 x 8 x 8 floats, a sample: 8192) with the block's buffers:
  // patches 2 x 4 x 27 floats (864), its targets 4 x 4 floats (64), batch and
  // evaluation slices (4 + 4) x (27 + 16) doubles (2752), and the trainer's 12
  // doubles for each of the kernel's 4 x 3 x 3 x 3 weights (10368).
  r.mutable_gptq()->set_rows_per_block(4);
  r.mutable_gptq()->set_batch_rows(4);
  const int64_t block = 8192 + 864 + 64 + 2752 + 10368;
  const int64_t model = static_cast<int64_t>(r.onnx_model().size());
  const int64_t calibration = 2048 + 8 * kHistogram;
  EXPECT_EQ(
      EstimateJobMemoryBytes(r, JobLimits{}, 1),
      3072 + 8 * model + std::max(calibration, 64 + block) + kEstimateBase);
  r.mutable_quantization()->set_weights_error_method(v1::ERROR_METHOD_HMSE);
  const int64_t w = model / 4;
  const int64_t hessian = 2048 + 48 * w;
  // GPTQ keeps the scores, a float a weight: the model's bytes.
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1),
            3072 + 8 * model +
                std::max({calibration, hessian, 64 + block + model}) +
                kEstimateBase);
}

// GPTQ's stage as the peak: one 3x3 Conv of 64 x 64 channels on x[1,64,1,1],
// one sample. The trainer's 96 bytes for each of its 36864 weights (3.5 MB)
// beat the Hessian stage's 48 and calibration's two histograms, with HMSE
// or without; HMSE adds the scores GPTQ keeps, a float a weight: the
// model's bytes.
TEST(EstimateJobMemoryBytes, GptqKeepsTheHmseScores) {
  v1::QuantizeRequest r = testing::ConvJob(64, 1, 64, 1, "r");
  r.mutable_gptq()->set_enabled(true);
  const int64_t plain = EstimateJobMemoryBytes(r, JobLimits{}, 1);
  r.mutable_quantization()->set_weights_error_method(v1::ERROR_METHOD_HMSE);
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1) - plain,
            static_cast<int64_t>(r.onnx_model().size()));
}

// The Hessian term where it is the peak: four 1x1 Convs, x[1,4,1,1] ->
// a -> b -> c -> y, each [1,32,1,1] (128 bytes; the sample's 512, at most
// two alive at once: 256), one sample, one thread. The scores count every
// kernel (w = model/4 floats): 2 x 512 + 4w for the running sample, 4 x 8w
// for the round, 12w for the sums: 1024 + 48w. GPTQ's largest block is
// one 32x32 kernel's, after the targets (a row of 32 floats for each
// kernel, 512): the cache (two of the largest activation, 256), its
// patches 2 x 32 floats (256), targets 32 floats (128), the batch and
// evaluation slices 2 x (32 + 4 x 32) doubles (2560) and the trainer's 12
// doubles a weight (98304). Calibration holds 2 x 256 in flight and the
// histograms of x, a, b, c and y.
TEST(EstimateJobMemoryBytes, HessianScoresOfManyKernelsAreThePeak) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 4, 1, 1});
  b.Output("y", DType::kFloat, {1, 32, 1, 1}, true);
  const char* names[] = {"a", "b", "c", "y"};
  std::string in = "x";
  for (int k = 0; k < 4; ++k) {
    const int64_t c = k == 0 ? 4 : 32;
    const std::string w = absl::StrCat("w", k);
    b.Initializer(
        w, Tensor::FromVector<float>(
               std::vector<float>(32 * c, 0.01f * (k + 1)), {32, c, 1, 1}));
    b.AddNode("Conv", {in, w}, {names[k]});
    in = names[k];
  }
  v1::QuantizeRequest r = JobFor(b, 1, 1);
  r.mutable_gptq()->set_enabled(true);
  auto input = Preflight(r);
  ASSERT_TRUE(input.ok()) << input.status();
  EXPECT_EQ(input->activations.total, 512);
  EXPECT_EQ(input->activations.live, 256);
  EXPECT_EQ(input->activations.histogrammed, 5);
  const int64_t calibration = 2 * 256 + 5 * kHistogram;
  const int64_t gptq = 4 * 128 + 256 + 256 + 128 + 2560 + 98304;
  ASSERT_LT(calibration, gptq);
  const int64_t plain = EstimateJobMemoryBytes(r, JobLimits{}, 1);
  r.mutable_quantization()->set_weights_error_method(v1::ERROR_METHOD_HMSE);
  const int64_t model = static_cast<int64_t>(r.onnx_model().size());
  const int64_t hessian = 1024 + 48 * (model / 4);
  // GPTQ keeps the scores (the model's bytes): still below.
  ASSERT_GT(hessian, gptq + model);
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1) - plain, hessian - gptq);
}

// The job's own estimate (after the import) counts GPTQ's stage as the
// request's does: the figures derived above, from the shapes inferred once
// for the activations.
TEST(EstimateJobMemoryBytes, PreflightCountsGptqFromTheInferredShapes) {
  v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 4, "r");
  r.mutable_gptq()->set_enabled(true);
  r.mutable_gptq()->set_rows_per_block(4);
  r.mutable_gptq()->set_batch_rows(4);
  auto input = Preflight(r);
  ASSERT_TRUE(input.ok()) << input.status();
  EXPECT_EQ(input->activations.total, 1024);
  EXPECT_EQ(input->gptq_stage.targets, 64);
  EXPECT_EQ(input->gptq_stage.block, 8192 + 864 + 64 + 2752 + 10368);
  EXPECT_EQ(input->gptq_stage.PeakBytes(1382),
            64 + 8192 + 864 + 64 + 2752 + 10368);
  r.mutable_gptq()->set_enabled(false);
  auto plain = Preflight(r);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->gptq_stage.PeakBytes(1382), 1382);  // nothing added
}

// The live set: x[1,4,8,8] -> a = Relu(x), b = Relu(a), c = Add(a, b),
// y = Relu(c); every tensor 1024 bytes. Total: a, b, c, y = 4096. Alive at
// once, node by node: a; a b; a b c (then a and b are read for the last
// time); c y. Most: 3072.
TEST(EstimateJobMemoryBytes, LiveSetFollowsTheLastReads) {
  OnnxModelBuilder b;
  b.Input("x", DType::kFloat, {1, 4, 8, 8});
  b.Output("y", DType::kFloat, {1, 4, 8, 8}, true);
  b.AddNode("Relu", {"x"}, {"a"});
  b.AddNode("Relu", {"a"}, {"b"});
  b.AddNode("Add", {"a", "b"}, {"c"});
  b.AddNode("Relu", {"c"}, {"y"});
  v1::QuantizeRequest r = JobFor(b, 1);
  auto input = Preflight(r);
  ASSERT_TRUE(input.ok()) << input.status();
  EXPECT_EQ(input->activations.total, 4096);
  EXPECT_EQ(input->activations.live, 3072);
}

// A model that does not parse adds no activations (the job fails at
// import); the estimate still covers the bytes sent.
TEST(EstimateJobMemoryBytes, UnparsableModelCountsOnlyItsBytes) {
  v1::QuantizeRequest r = testing::ConvJob(3, 8, 4, 1, "r");
  r.set_onnx_model("not a model");
  // 768 sample bytes once, 11 model bytes x8.
  EXPECT_EQ(EstimateJobMemoryBytes(r, JobLimits{}, 1),
            768 + 8 * 11 + kEstimateBase);
}

// x[1,4] -> If(c): then adds ReduceSum(w) of a body initializer w of
// `weights` floats, else passes x through. One calibration sample.
v1::QuantizeRequest IfJob(int weights) {
  onnx::GraphProto then_body;
  then_body.set_name("then");
  *then_body.add_initializer() = MakeTensorProto(
      "w",
      Tensor::FromVector<float>(std::vector<float>(weights, 0.5f), {weights}));
  auto add_node = [](onnx::GraphProto* g, const std::string& op,
                     std::vector<std::string> in, const std::string& out) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(op);
    for (const std::string& i : in) n->add_input(i);
    n->add_output(out);
  };
  add_node(&then_body, "ReduceSum", {"w"}, "s");
  add_node(&then_body, "Add", {"x", "s"}, "t");
  then_body.add_output()->set_name("t");
  onnx::GraphProto else_body;
  else_body.set_name("else");
  add_node(&else_body, "Identity", {"x"}, "e");
  else_body.add_output()->set_name("e");
  for (onnx::GraphProto* g : {&then_body, &else_body}) {
    g->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::FLOAT);
  }
  OnnxModelBuilder b(13);
  b.Input("c", DType::kBool, {});
  b.Input("x", DType::kFloat, {1, 4});
  b.AddNode("If", {"c"}, {"y"}, "branch")
      .GraphAttr("then_branch", then_body)
      .GraphAttr("else_branch", else_body);
  b.Output("y", DType::kFloat);
  v1::QuantizeRequest r;
  r.set_onnx_model(b.Serialize());
  r.mutable_tpc()->set_name("imx500@4.0");
  v1::Sample* sample = r.add_calibration_samples();
  v1::Tensor* c = sample->add_inputs();
  c->set_name("c");
  c->set_data_type(v1::DATA_TYPE_BOOL);
  c->set_raw_data(std::string(1, '\1'));
  v1::Tensor* x = sample->add_inputs();
  x->set_name("x");
  x->set_data_type(v1::DATA_TYPE_FLOAT);
  x->add_dims(1);
  x->add_dims(4);
  x->set_raw_data(std::string(16, '\0'));
  return r;
}

// Constants inside If bodies stay float (nothing packs, quantizes or lowers
// them): 5 copies instead of a quantized weight's 9. 2000 more body floats
// (8000 bytes) add 9x the serialized growth before the import, and once
// the model is parsed 4 x 8000 less and the request's freed copy less.
TEST(EstimateJobMemoryBytes, ConstantsInsideIfBodiesCountFiveCopies) {
  const v1::QuantizeRequest small = IfJob(1000), large = IfJob(3000);
  const int64_t grown = static_cast<int64_t>(large.onnx_model().size() -
                                             small.onnx_model().size());
  EXPECT_EQ(
      EstimateJobMemoryBytesBeforeImport(large, *ResolveJobSpec(large)) -
          EstimateJobMemoryBytesBeforeImport(small, *ResolveJobSpec(small)),
      9 * grown);
  EXPECT_EQ(EstimateJobMemoryBytes(large, JobLimits{}, 1) -
                EstimateJobMemoryBytes(small, JobLimits{}, 1),
            8 * grown - 4 * 8000);
}

// A model with a subgraph runs its report's two models apart (the float
// run's values all held until the fake-quant run reaches them): its live
// set counts as every activation. x[1,4] -> a = Relu(x), b = Relu(a),
// d = Relu(b), y = If(c){Identity(d)}: four tensors of 16 bytes, at most two
// alive at once in node order, counted as all four.
TEST(EstimateJobMemoryBytes, SubgraphsCountTheWholeSampleAsLive) {
  onnx::GraphProto then_body, else_body;
  for (onnx::GraphProto* body : {&then_body, &else_body}) {
    body->set_name(body == &then_body ? "then" : "else");
    onnx::NodeProto* n = body->add_node();
    n->set_op_type("Identity");
    n->add_input("d");
    n->add_output("t");
    body->add_output()->set_name("t");
  }
  OnnxModelBuilder b(13);
  b.Input("c", DType::kBool, {});
  b.Input("x", DType::kFloat, {1, 4});
  b.AddNode("Relu", {"x"}, {"a"});
  b.AddNode("Relu", {"a"}, {"b"});
  b.AddNode("Relu", {"b"}, {"d"});
  b.AddNode("If", {"c"}, {"y"}, "branch")
      .GraphAttr("then_branch", then_body)
      .GraphAttr("else_branch", else_body);
  b.Output("y", DType::kFloat);
  v1::QuantizeRequest r = IfJob(1);
  r.set_onnx_model(b.Serialize());
  auto input = Preflight(r);
  ASSERT_TRUE(input.ok()) << input.status();
  EXPECT_EQ(input->activations.total, 64);
  EXPECT_EQ(input->activations.live, 64);
}

}  // namespace
}  // namespace quantd
