#include "clients/batch/job_options.h"

#include <cmath>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "clients/batch/mixed_precision_flags.h"
#include "core/datagen/calib_spec.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

absl::Status Invalid(const std::string& message) {
  return absl::InvalidArgumentError(message);
}

absl::Status IntIn(const std::string& text, int lo, int hi, int* out) {
  int n = 0;
  if (!absl::SimpleAtoi(text, &n) || n < lo || n > hi) {
    return Invalid(
        absl::StrCat("'", text, "' is not an integer in [", lo, ", ", hi, "]"));
  }
  *out = n;
  return absl::OkStatus();
}

absl::Status Switch(const std::string& text, bool* out) {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower == "true" || lower == "1" || lower == "yes") {
    *out = true;
  } else if (lower.empty() || lower == "false" || lower == "0" ||
             lower == "no") {
    *out = false;
  } else {
    return Invalid(absl::StrCat("'", text, "' is not true or false"));
  }
  return absl::OkStatus();
}

absl::Status WeightsBits(const std::string& text, JobFiles* job) {
  return IntIn(text, 1, 16, &job->weights_bits);
}

absl::Status Mp(const std::string& text, JobFiles* job) {
  v1::MixedPrecisionConfig mp;
  if (absl::Status st = ParseMpTargets(text, &mp); !st.ok()) return st;
  job->mp = text;
  return absl::OkStatus();
}

absl::Status BitsOverride(const std::string& text, JobFiles* job) {
  v1::MixedPrecisionConfig mp;
  if (absl::Status st = ParseBitWidthOverrides(text, &mp); !st.ok()) return st;
  job->bits_override = text;
  return absl::OkStatus();
}

absl::Status KeepFloat(const std::string& text, JobFiles* job) {
  v1::QuantizationConfig config;
  if (absl::Status st = ParseKeepFloat(text, &config); !st.ok()) return st;
  job->keep_float = text;
  return absl::OkStatus();
}

absl::Status ActivationStorage(const std::string& text, JobFiles* job) {
  if (!ParseActivationStorage(text, &job->activation_storage)) {
    return Invalid(absl::StrCat("'", text, "' is not int8, uint8 or auto"));
  }
  return absl::OkStatus();
}

absl::Status WeightStorage(const std::string& text, JobFiles* job) {
  if (!ParseWeightStorage(text, &job->weight_storage)) {
    return Invalid(absl::StrCat("'", text, "' is not int8 or uint8"));
  }
  return absl::OkStatus();
}

absl::Status Gptq(const std::string& text, JobFiles* job) {
  return Switch(text, &job->gptq);
}

absl::Status GptqConfigText(const std::string& text, JobFiles* job) {
  v1::GptqConfig config;
  RETURN_IF_ERROR(ParseTextFormat(text, kGptqConfigExample, &config));
  job->gptq_config = text;
  return absl::OkStatus();
}

absl::Status MpConfigText(const std::string& text, JobFiles* job) {
  v1::MixedPrecisionConfig config;
  RETURN_IF_ERROR(ParseTextFormat(text, kMpConfigExample, &config));
  job->mp_config = text;
  return absl::OkStatus();
}

absl::Status Analyze(const std::string& text, JobFiles* job) {
  return Switch(text, &job->analyze);
}

absl::Status AnalyzeMethod(const std::string& text, JobFiles* job) {
  if (text == "estimate") {
    job->analyze_method = v1::SENSITIVITY_ANALYSIS_METHOD_ESTIMATE;
  } else if (text == "exact") {
    job->analyze_method = v1::SENSITIVITY_ANALYSIS_METHOD_EXACT;
  } else if (text == "auto") {
    job->analyze_method = v1::SENSITIVITY_ANALYSIS_METHOD_UNSPECIFIED;
  } else {
    return Invalid(absl::StrCat("'", text, "' is not estimate, exact or auto"));
  }
  job->analyze = true;
  return absl::OkStatus();
}

absl::Status Strict(const std::string& text, JobFiles* job) {
  return Switch(text, &job->strict);
}

absl::Status TargetBestEffort(const std::string& text, JobFiles* job) {
  return Switch(text, &job->target_best_effort);
}

absl::Status TargetSkipGptq(const std::string& text, JobFiles* job) {
  return Switch(text, &job->target_skip_gptq);
}

absl::Status Threads(const std::string& text, JobFiles* job) {
  return IntIn(text, 1, 1024, &job->threads);
}

absl::Status ReportSamples(const std::string& text, JobFiles* job) {
  if (text == "all" || text == "-1") {  // -1: QuantizeRequest's "all"
    job->report_samples = -1;
    return absl::OkStatus();
  }
  int n = 0;
  if (!absl::SimpleAtoi(text, &n) || n < 1) {
    return Invalid(absl::StrCat("'", text, "' is not a count >= 1 or 'all'"));
  }
  job->report_samples = n;
  return absl::OkStatus();
}

absl::Status FiniteNumber(const std::string& text, double lo, double hi,
                          std::optional<double>* out) {
  double v = 0;
  if (!absl::SimpleAtod(text, &v) || !std::isfinite(v) || v < lo || v > hi) {
    return Invalid(
        absl::StrCat("'", text, "' is not a number in [", lo, ", ", hi, "]"));
  }
  *out = v;
  return absl::OkStatus();
}

absl::Status TargetSqnr(const std::string& text, JobFiles* job) {
  return FiniteNumber(text, -1000, 1000, &job->target_sqnr);
}

absl::Status TargetCosine(const std::string& text, JobFiles* job) {
  if (absl::Status st = FiniteNumber(text, -1, 1, &job->target_cosine);
      !st.ok()) {
    return st;
  }
  if (*job->target_cosine <= -1) {
    return Invalid(absl::StrCat("'", text, "' is not in (-1, 1]"));
  }
  return absl::OkStatus();
}

absl::Status TargetMetric(const std::string& text, JobFiles* job) {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower != "sqnr" && lower != "cosine") {
    return Invalid(absl::StrCat("'", text, "' is not sqnr or cosine"));
  }
  job->target_metric = lower;
  return absl::OkStatus();
}

absl::Status Config(const std::string& text, JobFiles* job) {
  v1::QuantizationConfig config;
  RETURN_IF_ERROR(ParseTextFormat(text, kConfigExample, &config));
  job->config = text;
  return absl::OkStatus();
}

absl::Status GeneratedCalibration(const std::string& text, JobFiles* job) {
  auto options = datagen::ParseGeneratedCalibSpec(
      std::string(datagen::kGeneratedCalibPrefix) + text);
  if (!options.ok()) return options.status();
  job->generated_calibration = text;
  return absl::OkStatus();
}

absl::Status Export(const std::string& text, JobFiles* job) {
  if (!ParseExportFormats(text, &job->export_formats)) {
    return Invalid(absl::StrCat(
        "'", text, "' is not a list of qdq and mctq (e.g. qdq,mctq)"));
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<JobOption>& JobOptions() {
  static const auto* options = new std::vector<JobOption>{
      {"weights-bits", "N",
       "every kernel's weights at N bits (a TPC candidate); default: the TPC's",
       WeightsBits},
      {"mp", "TARGETS",
       "mixed precision: weights|activation|total|bops=FRACTION of 8-bit, "
       "or *_bytes / bops_count=ABSOLUTE, comma-separated",
       Mp},
      {"mp-config", "TEXT",
       "MixedPrecisionConfig fields in protobuf text format, e.g. "
       "'num_of_images: 8' (sensitivity on 8 images instead of MCT's 32: "
       "about 4x faster) or 'sensitivity_depth: 1' (each layer's distance "
       "at its next interest point only: 10-20x faster, not MCT's "
       "decisions; docs/mixed_precision.md)",
       MpConfigText},
      {"bits-override", "FILTER[@TARGET]=BITS,...",
       "manual bit widths; FILTER = type:OP | name:NODE | scope:SUBSTRING, "
       "TARGET = weights (default) | activation",
       BitsOverride},
      {"keep-float", "FILTER,...",
       "leave matching nodes in float (ORT's nodes_to_exclude); FILTER = "
       "type:OP | name:NODE | scope:SUBSTRING",
       KeepFloat},
      {"activation-storage", "int8|uint8|auto",
       "how the QDQ model stores 8-bit activations (default: int8)",
       ActivationStorage},
      {"weight-storage", "int8|uint8",
       "how the QDQ model stores 8-bit Conv/Gemm/MatMul kernels (default: "
       "int8; uint8 for x86 CPUs with AVX2 but no VNNI or AVX-512BW, where "
       "ORT's int8-weight kernels are not exact)",
       WeightStorage},
      {"gptq", "", "run GPTQ (gradient-based weight rounding) after PTQ", Gptq},
      {"gptq-config", "TEXT",
       "GptqConfig fields in protobuf text format (implies --gptq), e.g. "
       "'n_epochs: 20 rows_per_block: 8192' (docs/gptq.md)",
       GptqConfigText},
      {"analyze", "",
       "per-layer sensitivity: output SQNR with only each layer quantized / "
       "only it float, on the report's samples (report.json 'sensitivity')",
       Analyze},
      {"analyze-method", "estimate|exact|auto",
       "how the analysis computes its figures (implies --analyze; default "
       "auto: the first-order estimate when every op on the path has a "
       "backward pass, else exact; docs/analysis.md)",
       AnalyzeMethod},
      {"target-sqnr", "DB",
       "quality target: the cheapest configuration the TPC allows whose "
       "output SQNR on the evaluation samples reaches DB "
       "(docs/quality_target.md)",
       TargetSqnr},
      {"target-cosine", "C",
       "quality target as the worst output's mean cosine similarity",
       TargetCosine},
      {"target-metric", "sqnr|cosine",
       "which quality target applies (default: the one given)", TargetMetric},
      {"target-best-effort", "",
       "a target out of the TPC's reach returns the best configuration found "
       "(with a warning) instead of failing",
       TargetBestEffort},
      {"target-skip-gptq", "",
       "a target still out of reach after the options and bit upgrades gets "
       "no GPTQ trial (GPTQ costs several times a PTQ job)",
       TargetSkipGptq},
      {"strict", "",
       "a --keep-float or --bits-override filter that matches no node fails "
       "the job instead of warning",
       Strict},
      {"threads", "N",
       "threads for the job's data-parallel work (default: the CPUs this "
       "process may use, cgroup quota and affinity aware / the "
       "server's)",
       Threads},
      {"report-samples", "N|all",
       "calibration samples the report evaluates without --eval (default: 16)",
       ReportSamples},
      {"config", "TEXT",
       "QuantizationConfig fields in protobuf text format, e.g. "
       "'z_threshold: 8 shift_negative_params_search: true'",
       Config},
      {"export", "qdq,mctq", "ONNX formats to write (default: qdq)", Export},
      {"generated-calibration",
       "N[,shape=CxHxW,range=LO:HI,iterations=K,batch=B,lr=X,seed=S]",
       "the job generates N calibration images from the model's "
       "BatchNormalization statistics instead of taking samples "
       "(docs/data_generation.md); instead of calibration samples",
       GeneratedCalibration, /*flag=*/false},
  };
  return *options;
}

std::string JobOptionKey(const JobOption& option) {
  return absl::StrReplaceAll(option.name, {{"-", "_"}});
}

const JobOption* FindJobOption(absl::string_view name) {
  const std::string kebab = absl::StrReplaceAll(name, {{"_", "-"}});
  for (const JobOption& o : JobOptions()) {
    if (o.name == kebab) return &o;
  }
  return nullptr;
}

absl::Status ApplyJobOption(absl::string_view name, const std::string& text,
                            JobFiles* job) {
  const JobOption* option = FindJobOption(name);
  if (option == nullptr) {
    return Invalid(absl::StrCat("unknown job option '", name, "'"));
  }
  return option->apply(text, job);
}

}  // namespace quantd
