#include "core/pipeline/job/job_spec.h"

#include <cmath>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/datagen/generated_calibration.h"
#include "core/pipeline/job/report_details.h"
#include "core/pipeline/prep/op_config_bits.h"
#include "core/tpc/attribute_names.h"
#include "core/tpc/framework_info.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

absl::Status Unimplemented(const std::string& what) {
  return absl::UnimplementedError(
      absl::StrCat(what, " is not implemented by this quantd version"));
}

absl::StatusOr<NodeFilter> ToNodeFilter(const v1::NodeFilter& f,
                                        const std::string& path) {
  NodeFilter out;
  switch (f.filter_case()) {
    case v1::NodeFilter::kNodeType:
      out = {NodeFilter::By::kType, f.node_type()};
      break;
    case v1::NodeFilter::kNodeName:
      out = {NodeFilter::By::kName, f.node_name()};
      break;
    case v1::NodeFilter::kNameScope:
      out = {NodeFilter::By::kScope, f.name_scope()};
      break;
    default:
      break;
  }
  if (out.value.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": empty filter (set node_type, node_name or name_scope)"));
  }
  return out;
}

absl::Status ResolveQualityTarget(const v1::QualityTarget& t,
                                  QualityTargetOptions* out) {
  if (!v1::QualityTarget::Metric_IsValid(t.metric())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "quality_target.metric: ", t.metric(),
        " is not METRIC_UNSPECIFIED, METRIC_SQNR or METRIC_COSINE"));
  }
  if (!std::isfinite(t.value())) {
    return absl::InvalidArgumentError(
        absl::StrCat("quality_target.value: must be finite, got ", t.value()));
  }
  const bool cosine = t.metric() == v1::QualityTarget::METRIC_COSINE;
  if (cosine && !(t.value() > -1 && t.value() <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "quality_target.value: a cosine target must be in (-1, 1], got ",
        t.value()));
  }
  out->metric = cosine ? QualityTargetOptions::Metric::kCosine
                       : QualityTargetOptions::Metric::kSqnr;
  out->value = t.value();
  out->best_effort = t.best_effort();
  out->skip_gptq = t.skip_gptq();
  return absl::OkStatus();
}

absl::Status ResolveExport(const v1::ExportOptions& e, ExportOptions* out) {
  switch (e.activation_storage()) {
    case v1::ACTIVATION_STORAGE_UNSPECIFIED:
    case v1::ACTIVATION_STORAGE_INT8:
      out->activation_storage = ActivationStorage::kInt8;
      break;
    case v1::ACTIVATION_STORAGE_UINT8:
      out->activation_storage = ActivationStorage::kUint8;
      break;
    case v1::ACTIVATION_STORAGE_AUTO:
      out->activation_storage = ActivationStorage::kAuto;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "export_options.activation_storage: ", e.activation_storage(),
          " is not ACTIVATION_STORAGE_UNSPECIFIED, _UINT8, _INT8 or _AUTO"));
  }
  switch (e.weight_storage()) {
    case v1::WEIGHT_STORAGE_UNSPECIFIED:
    case v1::WEIGHT_STORAGE_INT8:
      out->weight_storage = WeightStorage::kInt8;
      break;
    case v1::WEIGHT_STORAGE_UINT8:
      out->weight_storage = WeightStorage::kUint8;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("export_options.weight_storage: ", e.weight_storage(),
                       " is not WEIGHT_STORAGE_UNSPECIFIED, _INT8 or _UINT8"));
  }
  // An empty format list means QDQ only.
  bool qdq = e.formats().empty(), mctq = false;
  for (int i = 0; i < e.formats_size(); ++i) {
    switch (e.formats(i)) {
      case v1::EXPORT_FORMAT_QDQ:
        qdq = true;
        break;
      case v1::EXPORT_FORMAT_MCTQ:
        mctq = true;
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("export_options.formats[", i, "]: ", e.formats(i),
                         " is not a format (EXPORT_FORMAT_QDQ or "
                         "EXPORT_FORMAT_MCTQ)"));
    }
  }
  out->qdq = qdq && !e.skip_qdq_onnx();
  out->mctq = mctq;
  out->lut_snap_to_int8 = e.lut_snap_to_int8();
  return absl::OkStatus();
}

absl::Status ResolveAttach(const v1::QuantizeRequest& r, AttachOptions* out) {
  const v1::QuantizationConfig& q = r.quantization();
  if (q.has_framework_info()) {
    if (absl::Status st = out->framework_info.ApplyOverride(q.framework_info());
        !st.ok()) {
      // The message names the field under framework_info.
      return absl::InvalidArgumentError(
          absl::StrCat("quantization.", st.message()));
    }
  }
  if (q.custom_tpc_opset_to_layer().entries_size() > 0) {
    out->custom_opset_mapping = q.custom_tpc_opset_to_layer();
  }
  for (int k = 0; k < q.keep_float_size(); ++k) {
    ASSIGN_OR_RETURN(
        NodeFilter f,
        ToNodeFilter(q.keep_float(k),
                     absl::StrCat("quantization.keep_float[", k, "]")));
    out->keep_float.push_back(std::move(f));
  }
  const int bits = r.mixed_precision().kernel_weights_bits();
  if (bits < 0 || bits > kMaxWeightBits) {
    return absl::InvalidArgumentError(
        absl::StrCat("mixed_precision.kernel_weights_bits: ", bits,
                     " is not in [1, ", kMaxWeightBits, "] (0 = unset)"));
  }
  out->kernel_weights_bits = bits;
  return absl::OkStatus();
}

// `abs` must be finite and >= 0, `frac` finite and > 0.
absl::Status ResolveTargets(const v1::ResourceUtilization& r, bool fraction,
                            ResourceTargets* out) {
  const char* field = fraction ? "target_fraction" : "target";
  const auto take = [&](bool has, double v, const char* name,
                        std::optional<double>* to) -> absl::Status {
    if (!has) return absl::OkStatus();
    const bool ok = std::isfinite(v) && (fraction ? v > 0 : v >= 0);
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("mixed_precision.", field, ".", name, ": ", v,
                       fraction ? " is not a finite value > 0"
                                : " is not a finite value >= 0"));
    }
    *to = v;
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(take(r.has_weights_memory_bytes(), r.weights_memory_bytes(),
                       "weights_memory_bytes", &out->weights_memory_bytes));
  RETURN_IF_ERROR(take(r.has_activation_memory_bytes(),
                       r.activation_memory_bytes(), "activation_memory_bytes",
                       &out->activation_memory_bytes));
  RETURN_IF_ERROR(take(r.has_total_memory_bytes(), r.total_memory_bytes(),
                       "total_memory_bytes", &out->total_memory_bytes));
  return take(r.has_bops(), r.bops(), "bops", &out->bops);
}

absl::Status ResolveMixedPrecision(const v1::MixedPrecisionConfig& c,
                                   MixedPrecisionOptions* out) {
  for (int k = 0; k < c.bit_width_overrides_size(); ++k) {
    const v1::BitWidthOverride& o = c.bit_width_overrides(k);
    const std::string path =
        absl::StrCat("mixed_precision.bit_width_overrides[", k, "]");
    if (o.filter().filter_case() == v1::NodeFilter::FILTER_NOT_SET) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".filter: no node_type, node_name or name_scope"));
    }
    if (o.target() != v1::BitWidthOverride::TARGET_WEIGHTS &&
        o.target() != v1::BitWidthOverride::TARGET_ACTIVATION) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".target: WEIGHTS or ACTIVATION required"));
    }
    if (o.bits() <= 0 || o.bits() > 32) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".bits: ", o.bits(), " is not in [1, 32]"));
    }
    if (!o.attr().empty() && o.attr() != tpc::kKernelAttr) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".attr: '", o.attr(),
                       "' (only kernel_attr has per-candidate bits)"));
    }
    BitWidthOverride& b = out->overrides.emplace_back();
    ASSIGN_OR_RETURN(b.filter, ToNodeFilter(o.filter(), path + ".filter"));
    b.weights = o.target() == v1::BitWidthOverride::TARGET_WEIGHTS;
    b.bits = o.bits();
  }
  if (c.sensitivity_depth() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mixed_precision.sensitivity_depth: ", c.sensitivity_depth(), " < 0"));
  }
  out->sensitivity_depth = c.sensitivity_depth();
  if (c.num_of_images() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mixed_precision.num_of_images: ", c.num_of_images(), " < 0"));
  }
  if (c.num_of_images() > 0) out->num_of_images = c.num_of_images();
  if (c.has_solver_time_limit_seconds()) {
    if (!(c.solver_time_limit_seconds() > 0)) {
      return absl::InvalidArgumentError(
          "mixed_precision.solver_time_limit_seconds: must be > 0");
    }
    out->solver_time_limit_seconds = c.solver_time_limit_seconds();
  }
  // `!(x >= lo)` also catches NaN.
  if (c.has_metric_epsilon()) {
    if (!(std::isfinite(c.metric_epsilon()) && c.metric_epsilon() >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("mixed_precision.metric_epsilon: ", c.metric_epsilon(),
                       " is not a finite number >= 0"));
    }
    out->metric_epsilon = c.metric_epsilon();
  }
  if (c.has_exp_distance_weighting_sigma()) {
    const double sigma = c.exp_distance_weighting_sigma();
    if (!(std::isfinite(sigma) && sigma > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("mixed_precision.exp_distance_weighting_sigma: ", sigma,
                       " is not a finite number > 0"));
    }
    out->exp_distance_weighting_sigma = sigma;
  }
  if (c.has_num_interest_points_factor()) {
    const double factor = c.num_interest_points_factor();
    if (!(factor > 0) || factor > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("mixed_precision.num_interest_points_factor: ", factor,
                       " is not in (0, 1]"));
    }
    out->num_interest_points_factor = factor;
  }
  switch (c.distance_weighting_method()) {
    case v1::DISTANCE_WEIGHTING_LAST_LAYER:
      out->weighting = mixed_precision::DistanceWeighting::kLastLayer;
      break;
    case v1::DISTANCE_WEIGHTING_EXP:
      out->weighting = mixed_precision::DistanceWeighting::kExp;
      break;
    case v1::DISTANCE_WEIGHTING_HESSIAN:
      return Unimplemented(
          "mixed_precision.distance_weighting_method: HESSIAN");
    default:
      out->weighting = mixed_precision::DistanceWeighting::kAvg;
  }
  if (c.use_hessian_based_scores()) {
    return Unimplemented("mixed_precision.use_hessian_based_scores");
  }
  out->refine_solution = !c.has_refine_mp_solution() || c.refine_mp_solution();
  out->kernel_weights_bits = c.kernel_weights_bits();
  RETURN_IF_ERROR(ResolveTargets(c.target(), false, &out->target));
  return ResolveTargets(c.target_fraction(), true, &out->target_fraction);
}

}  // namespace

int ReportSampleCount(int report_samples) {
  if (report_samples == 0) return kDefaultReportSamples;
  return report_samples < 0 ? -1 : report_samples;
}

absl::StatusOr<JobSpec> ResolveJobSpec(const v1::QuantizeRequest& request) {
  JobSpec spec;
  if (request.report_samples() < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "report_samples: must be -1 (all), 0 (the default, 16) or a count, "
        "got ",
        request.report_samples()));
  }
  spec.report_samples = ReportSampleCount(request.report_samples());
  if (request.has_quality_target()) {
    RETURN_IF_ERROR(
        ResolveQualityTarget(request.quality_target(), &spec.target.emplace()));
  }
  RETURN_IF_ERROR(
      ResolveExport(request.export_options(), &spec.export_options));
  RETURN_IF_ERROR(ResolveAttach(request, &spec.attach));
  spec.gptq_enabled = request.gptq().enabled();
  ASSIGN_OR_RETURN(
      spec.ptq, ResolvePtqOptions(request.quantization(), spec.gptq_enabled));
  spec.data_channel_equalization_set =
      request.quantization().has_data_channel_equalization();
  RETURN_IF_ERROR(
      ResolveMixedPrecision(request.mixed_precision(), &spec.mixed_precision));
  if (spec.GptqMayRun()) {
    ASSIGN_OR_RETURN(spec.gptq, ResolveGptqOptions(request.gptq()));
    if (spec.TargetTriesGptq() && request.gptq().n_epochs() == 0) {
      spec.gptq->n_epochs = kTargetGptqEpochs;
    }
  }
  // Options the pipeline cannot honour are rejected, never ignored.
  if (spec.ptq.weights_second_moment_correction) {
    return Unimplemented("quantization.weights_second_moment_correction");
  }
  if (spec.ptq.shift_negative_threshold_recalculation) {
    return Unimplemented("quantization.shift_negative_threshold_recalculation");
  }
  if (request.has_generated_calibration()) {
    ASSIGN_OR_RETURN(spec.generate,
                     datagen::DataGenOptionsFromGeneratedCalibration(
                         request.generated_calibration()));
  }
  spec.sensitivity_analysis = request.sensitivity_analysis();
  switch (request.sensitivity_analysis_method()) {
    case v1::SENSITIVITY_ANALYSIS_METHOD_UNSPECIFIED:
      spec.sensitivity_method = SensitivityMethod::kAuto;
      break;
    case v1::SENSITIVITY_ANALYSIS_METHOD_ESTIMATE:
      spec.sensitivity_method = SensitivityMethod::kEstimate;
      break;
    case v1::SENSITIVITY_ANALYSIS_METHOD_EXACT:
      spec.sensitivity_method = SensitivityMethod::kExact;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("sensitivity_analysis_method: unknown value ",
                       request.sensitivity_analysis_method()));
  }
  spec.strict = request.strict();
  spec.options_text = OptionsText(request);
  return spec;
}

}  // namespace quantd
