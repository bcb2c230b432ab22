#include "core/pipeline/memory/job_memory.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/datagen/data_generation.h"
#include "core/datagen/generated_calibration.h"
#include "core/graph/onnx_import.h"
#include "core/hessian/weights_hessian.h"
#include "core/pipeline/evaluation/kept_float_values.h"
#include "core/pipeline/evaluation/sensitivity_analysis.h"
#include "core/pipeline/job/activation_sizes.h"
#include "core/pipeline/job/samples.h"
#include "core/pipeline/mixed_precision/mixed_precision_stage.h"
#include "core/pipeline/mixed_precision/sensitivity.h"
#include "core/pipeline/quality_target/quality_target.h"
#include "core/quantizers/types.h"

namespace quantd {
namespace {

// The terms of the estimate were fitted to the peak RSS of real jobs, each
// alone in a fresh quantd (bench/service/memory_bench, docs/service.md):
// ppocr cls/det/rec, openWakeWord, Silero VAD and MobileNetV2, 1 and 2
// compute threads; every prediction within 17% of the measured peak.
// - 8 MiB per job whatever its size (TPC, executors, thread arenas);
// - the model 9 times: parsed, prepared, the float and fake-quant executors'
//   weights (packed), the fake-quant weights, the QuantizedGraph's weight
//   integers, the QDQ export and the result's copies; an MCTQ export holds
//   the float weights twice more (its graph and its bytes);
// - constants inside If/Loop bodies 5 times instead: they stay float, so
//   nothing packs, quantizes or lowers them (parsed, prepared, two
//   executors' graphs, the export);
// - the samples twice: the request's parsed copy and the decoded feeds
//   (the report's feeds share the calibration feeds' buffers); the
//   per-sample histograms are counted with the activations
//   (HistogramBytes).
int64_t BaseEstimate(int64_t sample_bytes, int64_t model_bytes,
                     int64_t body_constant_bytes,
                     const ExportOptions& export_options) {
  const int64_t model_copies = 9 + (export_options.mctq ? 2 : 0);
  const int64_t bodies =
      std::clamp<int64_t>(body_constant_bytes, 0, model_bytes);
  return sample_bytes * 2 + (model_bytes - bodies) * model_copies + bodies * 5 +
         (int64_t{8} << 20);
}

// Activations of the samples in flight. The first sample's run holds its
// live set (the most bytes alive at once): calibration's run once, the
// report's twice (its float and fake-quant sides run as one graph,
// paired_models.h, comparing at most four pairs at a time). Further samples
// in flight are at other points of their runs: 0.4x the sum of all
// activations each, but no more than 8x the live set (the report's two
// sides, and each thread's allocator arena keeping its own high-water mark):
// ppocr_rec's 440 activations sum to 192 MiB with 2.8 MiB alive at once,
// and a second sample adds 7-14 MiB, not 77 (memory_bench).
int64_t ActivationsInFlight(const ActivationSizes& per, int samples_in_flight,
                            int num_samples) {
  const int64_t in_flight = std::max<int64_t>(
      1,
      std::min<int64_t>({samples_in_flight, 1024, std::max(1, num_samples)}));
  constexpr int64_t kCap = int64_t{1} << 50;
  const int64_t total = std::min(kCap, per.total);
  const int64_t live = std::min(kCap, per.live);
  // At most 2^50 * (2 + 1023 * 2/5) < 2^60: no overflow.
  const int64_t further = std::min(total * 2 / 5, live * 8);
  return std::min(kCap, live * 2 + (in_flight - 1) * further);
}

// Calibration keeps one histogram (kHistogramBins counts, and a map node
// with the tensor's name) per histogrammed tensor and sample until it
// merges them after the last sample: 55 MiB for ppocr_rec's 16 samples,
// 2.8 MiB of samples.
int64_t HistogramBytes(const ActivationSizes& per, int num_samples) {
  constexpr int64_t kPerHistogram = quantizers::kHistogramBins * 4 + 192;
  const int64_t tensors = std::clamp<int64_t>(per.histogrammed, 0, 1 << 24);
  return tensors * std::clamp(num_samples, 1, 1 << 20) * kPerHistogram;
}

// Whether the `hessian` stage (HMSE weights) may run: asked for, or tried by
// the quality target's search when GPTQ runs.
bool MayComputeHessianScores(const JobSpec& spec) {
  return spec.gptq_enabled &&
         (spec.ptq.weights_error_method == quantizers::ErrorMethod::kHmse ||
          spec.target.has_value());
}

// The activations the job holds at its peak: calibration's samples in
// flight and histograms, the Hessian scores' tapes and estimates (the float
// weights counted as model_bytes / 4, EstimateHmseMemoryBytes) when HMSE may
// run, or the mixed-precision sensitivity's float cache, running tasks and
// the float runs that fill the cache (SensitivityMemoryBytes) when it
// searches, whichever is larger (the
// stages run after calibration, which has released its own).
int64_t PeakActivations(const JobSpec& spec, const ActivationSizes& sizes,
                        int samples_in_flight, int num_samples,
                        int64_t model_bytes) {
  const int64_t per_sample = sizes.total;
  int64_t calibration =
      ActivationsInFlight(sizes, samples_in_flight, num_samples) +
      HistogramBytes(sizes, num_samples);
  if (MayComputeHessianScores(spec)) {
    calibration = std::max(calibration,
                           hessian::EstimateHmseMemoryBytes(
                               model_bytes / 4, per_sample, samples_in_flight));
  }
  const MixedPrecisionOptions& mp = spec.mixed_precision;
  if (!mp.Searches()) return calibration;
  // The search runs on the prepared graph: a sample's activations there are
  // `prepared`. A weights target searches the kernels' bits alone, whose
  // cones' inputs and points the cache keeps; any other makes nearly every
  // node a cone's start, whose cache keeps nearly every activation (ppocr_cls
  // 5.4 of its 5.6 MB, ppocr_rec 114 of 120). Shift-negative correction
  // (before the search) adds its copies.
  const bool kernels_only = mp.SearchesWeightsOnly();
  const int64_t kept =
      (kernels_only ? sizes.sensitivity_kept : sizes.prepared) +
      (spec.ptq.shift_negative_activation_correction ? sizes.shift_negative
                                                     : 0) +
      (spec.ptq.shift_negative_constant_add ? sizes.shift_negative_constant_add
                                            : 0);
  const int sensitivity_samples =
      MixedPrecisionSensitivitySamples(mp, num_samples);
  // A task runs its cone one sample at a time: at most the graph's live
  // set, and no more than a cut cone makes.
  const int64_t run_bytes = kernels_only && mp.sensitivity_depth > 0
                                ? std::min(sizes.live, sizes.sensitivity_cone)
                                : sizes.live;
  return std::max(
      calibration,
      SensitivityMemoryBytes(
          kept, run_bytes,
          ActivationsInFlight(sizes, samples_in_flight, sensitivity_samples),
          sensitivity_samples, std::max(1, samples_in_flight)));
}

// The per-layer sensitivity analysis (sensitivity_analysis.h): the float
// and fake-quant caches of one chunk of samples (AnalysisChunkSamples, the
// same chunk the job uses), 0.8x every activation of each, and the node
// tasks' cones, 0.1x a sample's activations per sample in flight. Fitted
// with bench/service/memory_bench --analyze=1 (ppocr_cls, ppocr_rec,
// oww_embedding, 16 samples: +7%, +9%, -15%). It runs after the other
// stages have released theirs.
int64_t AnalysisCacheBytes(const ActivationSizes& sizes, int samples_in_flight,
                           int num_samples) {
  const double total =
      static_cast<double>(std::min(sizes.total, int64_t{1} << 50));
  const double chunk = std::clamp(AnalysisChunkSamples(sizes.total), 1,
                                  std::max(1, num_samples));
  const double in_flight = std::clamp(samples_in_flight, 1, 1024);
  return static_cast<int64_t>(
      std::min(0.8 * 2 * chunk * total + 0.1 * in_flight * total,
               static_cast<double>(int64_t{1} << 50)));
}

// The analysis's estimate (EstimateLayerSensitivity): the float cache of
// one chunk (0.8x every activation a sample), each node's change at its
// outputs for the sample it estimates (0.8x a sample's activations), and
// the probes' backward passes in flight, 0.1x a sample each (the gradients
// still live). Fitted like AnalysisCacheBytes (bench/recovery, analyze).
int64_t AnalysisEstimateBytes(const ActivationSizes& sizes,
                              int samples_in_flight, int num_samples) {
  const double total =
      static_cast<double>(std::min(sizes.total, int64_t{1} << 50));
  const double chunk = std::clamp(AnalysisChunkSamples(sizes.total), 1,
                                  std::max(1, num_samples));
  const double probes =
      std::clamp(samples_in_flight, 1, kSensitivityEstimateProbes);
  return static_cast<int64_t>(
      std::min(0.8 * chunk * total + 0.8 * total + 0.1 * probes * total,
               static_cast<double>(int64_t{1} << 50)));
}

// Unspecified (kAuto) may fall back to the exact analysis: the larger.
int64_t AnalysisBytes(const JobSpec& spec, const ActivationSizes& sizes,
                      int samples_in_flight, int num_samples) {
  if (!spec.sensitivity_analysis) return 0;
  const int64_t exact =
      AnalysisCacheBytes(sizes, samples_in_flight, num_samples);
  const int64_t estimate =
      AnalysisEstimateBytes(sizes, samples_in_flight, num_samples);
  switch (spec.sensitivity_method) {
    case SensitivityMethod::kExact:
      return exact;
    case SensitivityMethod::kEstimate:
      return estimate;
    case SensitivityMethod::kAuto:
      break;
  }
  return std::max(exact, estimate);
}

// The parts of the quality target that a job has reached (JobMemoryStage);
// every part for the whole job's estimate.
struct TargetParts {
  bool ranking = true, equalization = true;
  bool gptq_checkpoint = true, gptq_rest = true;
};

// The quality target's stage (quality_target.h): its upgrade ranking (when
// the ceiling reaches the target, or under a budget) runs the analysis on
// kTargetRankingSamples samples, after calibration has released its own;
// its GPTQ trial is counted as GPTQ (JobSpec::GptqMayRun, JobActivations);
// below the target without a data channel equalization setting, the job
// calibrates again for the equalization trial while the first calibration's
// state is held (TryChannelEqualization): half the calibration's peak more.
// Fitted with bench/service/memory_bench
// --target_sqnr=30 (ppocr_rec, which runs that trial, +0%; oww_embedding
// -9%; ppocr_cls, which reaches the target before it, +29%).
int64_t TargetBytes(const JobSpec& spec, const ActivationSizes& sizes,
                    int samples_in_flight, int64_t calibration,
                    const TargetParts& parts) {
  if (!spec.target.has_value()) return 0;
  const int64_t ranking =
      parts.ranking
          ? AnalysisCacheBytes(sizes, samples_in_flight, kTargetRankingSamples)
          : 0;
  const bool equalization_trial =
      parts.equalization && !spec.data_channel_equalization_set;
  return std::max(ranking, calibration) +
         (equalization_trial ? calibration / 2 : 0);
}

// What calibration keeps for the report (KeepsFloatValuesForReport): every
// activation of the report's samples that fit the budget whole (the job
// starts keeping no more: KeepForReport in quantize_job.cc).
int64_t KeptForReport(const JobSpec& spec, bool evaluation_samples_sent,
                      int64_t per_sample, int64_t report_samples) {
  if (!KeepsFloatValuesForReport(spec, evaluation_samples_sent)) return 0;
  if (per_sample <= 0) return 0;  // no shapes: no activations counted
  const int64_t n = std::clamp<int64_t>(report_samples, 0, 1 << 20);
  return SamplesKeptWhole(per_sample, n) * per_sample;
}

// The activations at the job's peak: calibration and the decisions
// (PeakActivations) with the float values kept for the report, or GPTQ,
// which runs after them. Its passes hold the samples in flight (the
// histograms have merged, the Hessian stage's tapes are gone); the HMSE
// scores, a float a weight (model_bytes), stay with the job.
int64_t JobActivations(const JobSpec& spec, const ActivationSizes& sizes,
                       const GptqStageMemory& gptq, int samples_in_flight,
                       int num_samples, int64_t model_bytes,
                       int64_t kept_for_report, const TargetParts& parts = {}) {
  const int64_t calibration =
      ActivationsInFlight(sizes, samples_in_flight, num_samples) +
      HistogramBytes(sizes, num_samples);
  const int64_t peak = std::max(
      {PeakActivations(spec, sizes, samples_in_flight, num_samples,
                       model_bytes),
       AnalysisBytes(spec, sizes, samples_in_flight, num_samples),
       TargetBytes(spec, sizes, samples_in_flight, calibration, parts)});
  // The target's GPTQ trial, when reached: up to its checkpoint, or whole.
  const bool trial =
      spec.TargetTriesGptq() && (parts.gptq_checkpoint || parts.gptq_rest);
  if (!spec.gptq_enabled && !trial) return peak + kept_for_report;
  const bool checkpoint = !spec.gptq_enabled && !parts.gptq_rest;
  const int64_t passes =
      ActivationsInFlight(sizes, samples_in_flight, num_samples);
  const int64_t scores =
      MayComputeHessianScores(spec) ? std::max<int64_t>(0, model_bytes) : 0;
  return std::max(peak + kept_for_report,
                  gptq.PeakBytes(passes, checkpoint) + scores);
}

// The request's sample bytes, and its generated images of a shape given in
// the request (else counted after the import, from the model's input).
int64_t RequestSampleBytes(const v1::QuantizeRequest& request,
                           const JobSpec& spec) {
  int64_t generated = 0;
  if (spec.generate.has_value() && spec.generate->shape.size() >= 3) {
    const std::vector<int64_t>& shape = spec.generate->shape;
    // In double, capped: the request is untrusted.
    double bytes =
        4.0 * static_cast<double>(std::max<int64_t>(0, spec.generate->count));
    for (size_t i = shape.size() - 3; i < shape.size(); ++i) {
      bytes *= static_cast<double>(std::max<int64_t>(0, shape[i]));
    }
    generated = static_cast<int64_t>(
        std::min(bytes, static_cast<double>(int64_t{1} << 50)));
  }
  return RawSampleBytes(request.calibration_samples()) +
         RawSampleBytes(request.evaluation_samples()) + generated;
}

// EstimateJobMemoryBytesBeforeImport with the bodies' constants known.
int64_t BeforeImport(const v1::QuantizeRequest& request, const JobSpec& spec,
                     int64_t body_constant_bytes) {
  return BaseEstimate(RequestSampleBytes(request, spec),
                      static_cast<int64_t>(request.onnx_model().size()),
                      body_constant_bytes, spec.export_options);
}

// The spec of a request that may not have been validated (tools, tests,
// fuzzing): the defaults where it does not resolve, whose estimate is the
// plain job's (the job itself then fails on the spec).
JobSpec SpecOrDefaults(const v1::QuantizeRequest& request) {
  absl::StatusOr<JobSpec> spec = ResolveJobSpec(request);
  return spec.ok() ? *std::move(spec) : JobSpec();
}

// What the Quantize estimate is made of, however it is gathered: from the
// preflight's JobInput, or from a model and a request before a job exists
// (tools, tests, the quantize job of a Prune).
struct QuantizeTerms {
  const JobSpec* spec = nullptr;
  bool evaluation_samples_sent = false;
  ActivationSizes activations;  // one sample's
  GptqStageMemory gptq;
  const Model* model = nullptr;  // as imported: the generate stage's
  int64_t model_bytes = 0, body_constant_bytes = 0;
  int64_t sample_bytes = 0;
  int64_t payload = 0;      // what the server frees after the import
  int64_t calibration = 0;  // the samples calibrated on
  int64_t evaluated = 0;    // the report's samples
};

// BaseEstimate less the payload, and the larger of the generate stage
// (before calibration) and the job's activations.
int64_t QuantizeEstimate(const QuantizeTerms& t, int samples_in_flight,
                         const TargetParts& parts = {}) {
  // The analysis's method as the job resolves it, on the imported model.
  JobSpec spec = *t.spec;
  if (spec.sensitivity_analysis && t.model != nullptr) {
    spec.sensitivity_method =
        ResolveSensitivityMethod(spec.sensitivity_method, *t.model);
  }
  const int64_t activations = JobActivations(
      spec, t.activations, t.gptq, samples_in_flight,
      static_cast<int>(std::clamp<int64_t>(t.calibration, 0, 1 << 20)),
      t.model_bytes,
      KeptForReport(spec, t.evaluation_samples_sent, t.activations.prepared,
                    t.evaluated),
      parts);
  const int64_t generate =
      spec.generate.has_value()
          ? EstimateGenerateMemoryBytes(*t.model, *spec.generate,
                                        samples_in_flight)
          : 0;
  return BaseEstimate(t.sample_bytes, t.model_bytes, t.body_constant_bytes,
                      spec.export_options) -
         t.payload + std::max(activations, generate);
}

// The terms of `spec` on `model` (as imported) for samples of the input
// shapes `shapes`; `shaped` receives the model with the shapes inferred
// (the terms point to it).
QuantizeTerms TermsOnModel(const JobSpec& spec, bool evaluation_samples_sent,
                           const Model& model, const InputShapes& shapes,
                           int64_t calibration, Model* shaped) {
  QuantizeTerms t;
  t.spec = &spec;
  t.evaluation_samples_sent = evaluation_samples_sent;
  t.body_constant_bytes = BodyConstantBytes(model.graph);
  *shaped = model;
  t.model = shaped;
  const bool inferred = InferSampleShapes(shapes, shaped);
  t.activations = ActivationBytesPerSample(
      *shaped, inferred, shapes, spec.mixed_precision.sensitivity_depth);
  t.gptq = GptqStageFor(spec, *shaped, calibration);
  t.calibration = calibration;
  const int report = spec.report_samples;
  t.evaluated =
      report < 0 ? calibration : std::min<int64_t>(report, calibration);
  return t;
}

}  // namespace

// Before the import the bodies are unknown: every byte counts as a quantized
// model's (the larger estimate).
int64_t EstimateJobMemoryBytesBeforeImport(const v1::QuantizeRequest& request,
                                           const JobSpec& spec) {
  return BeforeImport(request, spec, /*body_constant_bytes=*/0);
}

namespace {

// The job's terms as the server runs it, for `spec` (the input's, or the
// input's with parts of the quality target left out).
QuantizeTerms TermsOfInput(const JobInput& input, const JobSpec& spec) {
  QuantizeTerms t;
  t.spec = &spec;
  t.evaluation_samples_sent = input.evaluation_samples_sent;
  t.activations = input.activations;
  t.gptq = input.gptq_stage;
  t.model = &input.model;
  t.model_bytes = input.model_bytes;
  t.body_constant_bytes = input.body_constant_bytes;
  t.sample_bytes = input.sample_bytes;
  // BaseEstimate counts the payload's bytes once more than the job holds
  // once the server has freed them (memory_bench: MobileNetV2's peak fell
  // by 77 MiB, its 37 MiB of samples and 13 MiB model).
  t.payload = input.request_payload_bytes;
  // Generated calibration: the count is known before the images are.
  const bool generated = spec.generate.has_value();
  t.calibration = generated ? spec.generate->count
                            : static_cast<int64_t>(input.calibration.size());
  t.evaluated = static_cast<int64_t>(input.evaluation.size());
  if (generated && !input.evaluation_samples_sent) {
    const int n = spec.report_samples;
    t.evaluated = n < 0 ? t.calibration : std::min<int64_t>(n, t.calibration);
  }
  return t;
}

}  // namespace

int64_t EstimateJobMemoryBytes(const JobInput& input, int samples_in_flight) {
  return QuantizeEstimate(TermsOfInput(input, input.spec), samples_in_flight);
}

namespace {

// A target stage's bit in JobMemoryReservation's sets; 0 for kAdmitted.
unsigned StageBit(JobMemoryStage stage) {
  const int s = static_cast<int>(stage);
  return s == 0 ? 0u : 1u << (s - 1);
}

}  // namespace

JobMemoryReservation::JobMemoryReservation(const JobInput& input,
                                           int samples_in_flight) {
  // The analysis's method resolved once for every set (QuantizeEstimate
  // keeps a resolved one).
  JobSpec spec = input.spec;
  if (spec.sensitivity_analysis) {
    spec.sensitivity_method =
        ResolveSensitivityMethod(spec.sensitivity_method, input.model);
  }
  const QuantizeTerms t = TermsOfInput(input, spec);
  if (!spec.target.has_value()) {  // one figure throughout
    by_reached_.fill(QuantizeEstimate(t, samples_in_flight));
    return;
  }
  for (unsigned set = 0; set < by_reached_.size(); ++set) {
    const auto has = [set](JobMemoryStage s) {
      return (set & StageBit(s)) != 0;
    };
    TargetParts parts;
    parts.ranking = has(JobMemoryStage::kTargetRanking);
    parts.equalization = has(JobMemoryStage::kTargetEqualization);
    parts.gptq_checkpoint = has(JobMemoryStage::kTargetGptq);
    parts.gptq_rest = has(JobMemoryStage::kTargetGptqRest);
    by_reached_[set] = QuantizeEstimate(t, samples_in_flight, parts);
  }
}

int64_t JobMemoryReservation::Reach(JobMemoryStage stage) {
  reached_ |= StageBit(stage);
  return bytes();
}

int64_t EstimateJobMemoryBytes(const v1::QuantizeRequest& request,
                               const JobLimits& limits, int samples_in_flight) {
  const JobSpec spec = SpecOrDefaults(request);
  const bool evaluation_sent = request.evaluation_samples_size() > 0;
  const int64_t model_size = static_cast<int64_t>(request.onnx_model().size());
  // As the server runs it: the request's payload freed after the import.
  const int64_t payload =
      model_size + RawSampleBytes(request.calibration_samples());
  auto model = request.onnx_model().empty()
                   ? absl::StatusOr<Model>(absl::InvalidArgumentError(""))
                   : ImportOnnx(request.onnx_model(), ImportOptionsFor(limits));
  if (!model.ok()) {  // no activations counted: the job fails on the import
    const int calibration = request.calibration_samples_size();
    return BeforeImport(request, spec, 0) - payload +
           JobActivations(spec, {}, {}, samples_in_flight, calibration,
                          model_size, 0);
  }
  // Only the first sample's shapes matter: decode that one.
  google::protobuf::RepeatedPtrField<v1::Sample> head;
  if (!request.calibration_samples().empty()) {
    *head.Add() = request.calibration_samples(0);
  }
  auto first = DecodeSamples(head, model->graph.inputs, "calibration_samples",
                             limits.max_sample_bytes);
  Model shaped;
  QuantizeTerms t =
      TermsOnModel(spec, evaluation_sent, *model,
                   first.ok() ? FirstSampleShapes(*first) : InputShapes(),
                   request.calibration_samples_size(), &shaped);
  t.model_bytes = model_size;
  t.sample_bytes = RequestSampleBytes(request, spec);
  t.payload = payload;
  return QuantizeEstimate(t, samples_in_flight);
}

namespace {

constexpr int64_t kCap = int64_t{1} << 50;

int64_t Saturated(double bytes) {
  return static_cast<int64_t>(
      std::clamp(bytes, 0.0, static_cast<double>(kCap)));
}

// The image shape a generate job optimises for `model`: the options' shape,
// else the input's declared dims, else an ImageNet image (unknown dims).
std::vector<int64_t> GeneratedImageShape(const Model& model,
                                         const datagen::DataGenOptions& o) {
  std::vector<int64_t> chw = {3, 224, 224};
  const std::vector<int64_t>& declared = o.shape.empty() &&
                                                 !model.graph.inputs.empty() &&
                                                 model.graph.inputs[0].has_shape
                                             ? model.graph.inputs[0].shape
                                             : o.shape;
  if (declared.size() >= 3) {
    const size_t k = declared.size() - 3;
    for (size_t d = 0; d < 3; ++d) {
      if (declared[k + d] > 0) chw[d] = declared[k + d];
    }
  }
  return {1, chw[0], chw[1], chw[2]};
}

}  // namespace

// Fitted to the peak RSS of `quantctl generate-data` in-process and of the
// GenerateData RPC (bench/service/memory_bench --generate): per image in
// all, the optimised (padded) image, Adam's two moments, its gradient, and
// the result with its event copy; per image of a batch, its tape
// (GradientGraph::Forward keeps every activation: kTapeFactor x the sum of
// one image's activations, the executor's arenas included); per thread
// running backward, the gradients alive at once and the convolutions'
// column buffers (kBackwardFactor x the sum); the model parsed and in the
// gradient graph; a fixed 64 MiB.
int64_t EstimateGenerateMemoryBytes(const Model& model,
                                    const datagen::DataGenOptions& o,
                                    int threads) {
  constexpr double kTapeFactor = 0.95;
  constexpr double kBackwardFactor = 1.25;
  const std::vector<int64_t> image_shape = GeneratedImageShape(model, o);
  double image = 4;
  double padded = 4 * static_cast<double>(image_shape[1]);
  for (int d = 1; d < 4; ++d) image *= static_cast<double>(image_shape[d]);
  for (int d = 2; d < 4; ++d) {
    padded *= static_cast<double>(image_shape[d] + o.extra_pixels);
  }
  ActivationSizes per_image;
  if (!model.graph.inputs.empty()) {
    Model shaped = model;
    const InputShapes shapes = {{model.graph.inputs[0].name, image_shape}};
    const bool inferred = InferSampleShapes(shapes, &shaped);
    per_image = ActivationBytesPerSample(shaped, inferred, shapes);
  }
  const double count = static_cast<double>(std::max<int64_t>(0, o.count));
  const double batch = static_cast<double>(
      std::clamp<int64_t>(o.batch_size, 1, std::max<int64_t>(1, o.count)));
  const double running =
      std::min(batch, static_cast<double>(std::clamp(threads, 1, 1024)));
  const double activations = static_cast<double>(per_image.total);
  const double model_bytes = [&] {
    double bytes = 0;
    for (const auto& [name, t] : model.graph.initializers) {
      bytes += static_cast<double>(t.byte_size());
    }
    return bytes;
  }();
  return Saturated(count * (4 * padded + 2 * image) +
                   batch * kTapeFactor * activations +
                   running * kBackwardFactor * activations + 2 * model_bytes +
                   static_cast<double>(int64_t{64} << 20));
}

// Fitted like the generate estimate (bench/service/side_memory_bench
// --only=prune; two 3x3 convolutions of 64 channels on one 128x128 to
// 512x512 sample, LFH and magnitude): the request three times (received,
// parsed samples, the decoded feeds); the model's initializers five times
// (parsed, the gradient graph's, the pruned copy, its export and the
// result's bytes); a fixed 8 MiB; and the larger of LFH's Hessian passes
// (kLfhFactor x the sum of one sample's activations per running sample:
// the tape, its gradients, the Hutchinson probes and the convolutions'
// column buffers) and the evaluation (the two executors run one sample
// after the other: kEvaluateFactor x the sum). Generated calibration runs
// before them: the larger of its estimate and the pruning with its images
// as samples. A quantize stage runs after the pruning has released its
// passes: the larger of the two.
constexpr int64_t kPruneFixedBytes = int64_t{8} << 20;

int64_t EstimatePruneMemoryBytesBeforeImport(const v1::PruneRequest& request) {
  return Saturated(3 * static_cast<double>(request.ByteSizeLong()) +
                   static_cast<double>(request.onnx_model().size()) +
                   static_cast<double>(kPruneFixedBytes));
}

int64_t EstimatePruneMemoryBytes(const v1::PruneRequest& request,
                                 const Model& model, int threads) {
  constexpr double kLfhFactor = 3.4;
  constexpr double kEvaluateFactor = 0.95;
  const double request_bytes = static_cast<double>(request.ByteSizeLong());
  double weights = 0;
  for (const auto& [name, t] : model.graph.initializers) {
    weights += static_cast<double>(t.byte_size());
  }
  InputShapes shapes;
  if (request.calibration_samples_size() > 0) {
    for (const v1::Tensor& t : request.calibration_samples(0).inputs()) {
      shapes[t.name()].assign(t.dims().begin(), t.dims().end());
    }
  }
  double generate = 0, images = 0;
  int64_t samples = request.calibration_samples_size();
  if (request.has_generated_calibration()) {
    auto options = datagen::DataGenOptionsFromGeneratedCalibration(
        request.generated_calibration());
    if (options.ok()) {
      generate = static_cast<double>(
          EstimateGenerateMemoryBytes(model, *options, threads));
      if (!model.graph.inputs.empty()) {
        const std::vector<int64_t> shape = GeneratedImageShape(model, *options);
        shapes = {{model.graph.inputs[0].name, shape}};
        images = 4.0 * static_cast<double>(options->count) *
                 static_cast<double>(shape[1]) * static_cast<double>(shape[2]) *
                 static_cast<double>(shape[3]);
      }
      samples = options->count;
    }
  }
  Model shaped = model;
  const bool inferred = InferSampleShapes(shapes, &shaped);
  const double activations = static_cast<double>(
      ActivationBytesPerSample(shaped, inferred, shapes).total);
  const bool lfh = request.importance_metric().empty() ||
                   request.importance_metric() == "lfh";
  const int64_t scored =
      request.num_score_approximations() > 0
          ? std::min<int64_t>(samples, request.num_score_approximations())
          : samples;
  const double running = static_cast<double>(
      std::clamp<int64_t>(std::min<int64_t>(threads, scored), 1, 1024));
  const double passes = std::max(lfh ? running * kLfhFactor * activations : 0,
                                 kEvaluateFactor * activations);
  const double prune = 3 * request_bytes + 5 * weights +
                       static_cast<double>(kPruneFixedBytes) + 2 * images +
                       passes;
  double quantize = 0;
  if (request.has_quantize()) {
    // The pruned model is no larger than the model: its quantize job as
    // RunPruneJob builds it (the pruning request's samples, or the
    // generated images, copied into it, nothing freed), beside the pruning
    // request itself.
    v1::QuantizeRequest q = request.quantize();
    q.clear_generated_calibration();
    const int64_t sample_bytes =
        (images > 0 ? static_cast<int64_t>(images)
                    : RawSampleBytes(request.calibration_samples())) +
        RawSampleBytes(request.evaluation_samples());
    const JobSpec spec = SpecOrDefaults(q);
    Model quantized;
    QuantizeTerms t =
        TermsOnModel(spec, q.evaluation_samples_size() > 0, shaped, shapes,
                     std::clamp<int64_t>(samples, 0, 1 << 20), &quantized);
    t.model_bytes = static_cast<int64_t>(request.onnx_model().size());
    t.sample_bytes = sample_bytes;
    quantize =
        static_cast<double>(QuantizeEstimate(t, threads)) + request_bytes;
  }
  return Saturated(std::max({generate, prune, quantize}));
}

}  // namespace quantd
