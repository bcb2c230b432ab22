#include "clients/batch/job_files.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "clients/batch/mixed_precision_flags.h"
#include "clients/batch/proto_output.h"
#include "core/datagen/calib_spec.h"
#include "core/datagen/generated_calibration.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/samples.h"
#include "core/tpc/json_io.h"
#include "core/util/status_macros.h"
#include "google/protobuf/text_format.h"

namespace quantd {
namespace {

constexpr int64_t kMaxModelFileBytes = int64_t{2} << 30;

absl::Status AddSamples(const std::string& dir,
                        const std::vector<std::string>& inputs,
                        google::protobuf::RepeatedPtrField<v1::Sample>* out) {
  ASSIGN_OR_RETURN(SampleSet set, ReadSampleSet(dir, inputs));
  if (set.size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": no samples found"));
  }
  for (const auto& sample : set.samples) {
    v1::Sample* s = out->Add();
    for (const auto& [name, t] : sample) {
      *s->add_inputs() = TensorToSampleProto(t, name);
    }
  }
  return absl::OkStatus();
}

// `generated:N,...` (core/datagen/calib_spec.h) as the request's
// generated_calibration: the job generates the images, in-process or on the
// server alike.
absl::Status SetGeneratedCalibration(const std::string& spec,
                                     v1::QuantizeRequest* request) {
  ASSIGN_OR_RETURN(datagen::DataGenOptions options,
                   datagen::ParseGeneratedCalibSpec(spec));
  *request->mutable_generated_calibration() =
      datagen::GeneratedCalibrationFromOptions(options);
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseMpTargets(const std::string& spec,
                            v1::MixedPrecisionConfig* mp) {
  return ParseMixedPrecisionTargets(spec, mp);
}

bool ParseExportFormats(const std::string& text,
                        std::vector<v1::ExportFormat>* formats) {
  formats->clear();
  for (absl::string_view part : absl::StrSplit(text, absl::ByAnyChar(",;+"))) {
    const std::string name =
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(part));
    v1::ExportFormat f;
    if (name.empty()) continue;
    if (name == "qdq") {
      f = v1::EXPORT_FORMAT_QDQ;
    } else if (name == "mctq") {
      f = v1::EXPORT_FORMAT_MCTQ;
    } else {
      return false;
    }
    if (std::find(formats->begin(), formats->end(), f) == formats->end()) {
      formats->push_back(f);
    }
  }
  return true;
}

bool ParseWeightStorage(const std::string& text, v1::WeightStorage* storage) {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower.empty() || lower == "default") {
    *storage = v1::WEIGHT_STORAGE_UNSPECIFIED;
  } else if (lower == "uint8") {
    *storage = v1::WEIGHT_STORAGE_UINT8;
  } else if (lower == "int8") {
    *storage = v1::WEIGHT_STORAGE_INT8;
  } else {
    return false;
  }
  return true;
}

bool ParseActivationStorage(const std::string& text,
                            v1::ActivationStorage* storage) {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower.empty() || lower == "default") {
    *storage = v1::ACTIVATION_STORAGE_UNSPECIFIED;
  } else if (lower == "auto") {
    *storage = v1::ACTIVATION_STORAGE_AUTO;
  } else if (lower == "uint8") {
    *storage = v1::ACTIVATION_STORAGE_UINT8;
  } else if (lower == "int8") {
    *storage = v1::ACTIVATION_STORAGE_INT8;
  } else {
    return false;
  }
  return true;
}

bool IsTpcFile(const std::string& tpc) {
  for (const char* ext : {".json", ".textproto", ".txtpb", ".pbtxt"}) {
    const std::string e = ext;
    if (tpc.size() > e.size() &&
        tpc.compare(tpc.size() - e.size(), e.size(), e) == 0) {
      return true;
    }
  }
  return tpc.find('/') != std::string::npos;
}

// `flag TEXT` (text format) merged into `out`; nothing when TEXT is empty.
absl::Status MergeTextFlag(absl::string_view flag, const std::string& text,
                           absl::string_view example,
                           google::protobuf::Message* out) {
  if (text.empty()) return absl::OkStatus();
  std::unique_ptr<google::protobuf::Message> parsed(out->New());
  if (absl::Status st = ParseTextFormat(text, example, parsed.get());
      !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", st.message()));
  }
  out->MergeFrom(*parsed);
  return absl::OkStatus();
}

// --target-sqnr / --target-cosine / --target-metric into quality_target.
absl::Status ApplyQualityTarget(const JobFiles& files,
                                v1::QuantizeRequest* request) {
  std::string metric = files.target_metric;
  if (metric.empty()) {
    if (files.target_sqnr && files.target_cosine) {
      return absl::InvalidArgumentError(
          "--target-metric: both --target-sqnr and --target-cosine are "
          "given; say which one with --target-metric sqnr|cosine");
    }
    if (files.target_sqnr) metric = "sqnr";
    if (files.target_cosine) metric = "cosine";
  }
  if (metric.empty()) {
    if (files.target_best_effort || files.target_skip_gptq) {
      return absl::InvalidArgumentError(
          absl::StrCat(files.target_best_effort ? "--target-best-effort"
                                                : "--target-skip-gptq",
                       ": needs --target-sqnr or --target-cosine"));
    }
    return absl::OkStatus();
  }
  v1::QualityTarget* t = request->mutable_quality_target();
  t->set_best_effort(files.target_best_effort);
  t->set_skip_gptq(files.target_skip_gptq);
  if (metric == "sqnr") {
    if (!files.target_sqnr) {
      return absl::InvalidArgumentError(
          "--target-sqnr: required by --target-metric sqnr");
    }
    t->set_metric(v1::QualityTarget::METRIC_SQNR);
    t->set_value(*files.target_sqnr);
  } else {
    if (!files.target_cosine) {
      return absl::InvalidArgumentError(
          "--target-cosine: required by --target-metric cosine");
    }
    t->set_metric(v1::QualityTarget::METRIC_COSINE);
    t->set_value(*files.target_cosine);
  }
  return absl::OkStatus();
}

absl::Status ApplyJobSettings(const JobFiles& files,
                              v1::QuantizeRequest* request) {
  if (IsTpcFile(files.tpc)) {
    ASSIGN_OR_RETURN(*request->mutable_tpc()->mutable_inline_tpc(),
                     tpc::LoadTpcFile(files.tpc));
  } else {
    request->mutable_tpc()->set_name(files.tpc);
  }
  if (!files.mp.empty()) {
    RETURN_IF_ERROR(
        ParseMpTargets(files.mp, request->mutable_mixed_precision()));
  }
  if (files.weights_bits > 0) {
    request->mutable_mixed_precision()->set_kernel_weights_bits(
        files.weights_bits);
  }
  if (files.activation_storage != v1::ACTIVATION_STORAGE_UNSPECIFIED) {
    request->mutable_export_options()->set_activation_storage(
        files.activation_storage);
  }
  if (files.weight_storage != v1::WEIGHT_STORAGE_UNSPECIFIED) {
    request->mutable_export_options()->set_weight_storage(files.weight_storage);
  }
  for (v1::ExportFormat f : files.export_formats) {
    request->mutable_export_options()->add_formats(f);
  }
  if (!files.bits_override.empty()) {
    RETURN_IF_ERROR(ParseBitWidthOverrides(files.bits_override,
                                           request->mutable_mixed_precision()));
  }
  RETURN_IF_ERROR(MergeTextFlag("--config", files.config, kConfigExample,
                                request->mutable_quantization()));
  RETURN_IF_ERROR(MergeTextFlag("--mp-config", files.mp_config,
                                kMpConfigExample,
                                request->mutable_mixed_precision()));
  if (!files.keep_float.empty()) {
    RETURN_IF_ERROR(
        ParseKeepFloat(files.keep_float, request->mutable_quantization()));
  }
  RETURN_IF_ERROR(ApplyQualityTarget(files, request));
  if (!files.gptq_config.empty()) {
    RETURN_IF_ERROR(MergeTextFlag("--gptq-config", files.gptq_config,
                                  kGptqConfigExample, request->mutable_gptq()));
    request->mutable_gptq()->set_enabled(true);
  }
  if (files.gptq) request->mutable_gptq()->set_enabled(true);
  if (files.analyze) request->set_sensitivity_analysis(true);
  request->set_sensitivity_analysis_method(files.analyze_method);
  if (files.strict) request->set_strict(true);
  if (!files.generated_calibration.empty()) {
    RETURN_IF_ERROR(SetGeneratedCalibration(
        datagen::kGeneratedCalibPrefix + files.generated_calibration, request));
  }
  request->set_num_threads(files.threads);
  request->set_report_samples(files.report_samples);
  return absl::OkStatus();
}

absl::Status ParseTextFormat(const std::string& text, absl::string_view example,
                             google::protobuf::Message* out) {
  if (google::protobuf::TextFormat::ParseFromString(text, out)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("not ", out->GetDescriptor()->name(),
                   " text format (fields of proto/quantd/v1/job.proto, e.g. '",
                   example, "'): ", text));
}

absl::StatusOr<v1::QuantizeRequest> BuildQuantizeRequest(
    const JobFiles& files) {
  ASSIGN_OR_RETURN(std::string model_bytes,
                   ReadFileLimited(files.model, kMaxModelFileBytes));
  std::vector<std::string> inputs;
  {
    auto model = ImportOnnx(model_bytes);
    if (!model.ok()) {
      return absl::Status(
          model.status().code(),
          absl::StrCat(files.model, ": ", model.status().message()));
    }
    for (const auto& in : model->graph.inputs) inputs.push_back(in.name);
  }
  v1::QuantizeRequest request;
  request.set_onnx_model(std::move(model_bytes));
  if (!files.calib.empty() && !files.generated_calibration.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "generated_calibration and calib (", files.calib,
        ") are both set; give one (calib generated:N is the same)"));
  }
  if (datagen::IsGeneratedCalibSpec(files.calib)) {
    RETURN_IF_ERROR(SetGeneratedCalibration(files.calib, &request));
  } else if (!files.calib.empty()) {
    RETURN_IF_ERROR(
        AddSamples(files.calib, inputs, request.mutable_calibration_samples()));
  }
  if (!files.eval.empty()) {
    RETURN_IF_ERROR(
        AddSamples(files.eval, inputs, request.mutable_evaluation_samples()));
  }
  RETURN_IF_ERROR(ApplyJobSettings(files, &request));
  return request;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ResultFiles(
    const v1::QuantizeResult& result) {
  std::vector<std::pair<std::string, std::string>> files;
  if (!result.qdq_onnx().empty()) {
    files.emplace_back("model.qdq.onnx", result.qdq_onnx());
  }
  if (!result.mctq_onnx().empty()) {
    files.emplace_back("model.mctq.onnx", result.mctq_onnx());
  }
  files.emplace_back("quantized_graph.pb",
                     SerializeDeterministic(result.quantized_graph()));
  ASSIGN_OR_RETURN(std::string json,
                   ToDeterministicJson(result.quantized_graph()));
  files.emplace_back("quantized_graph.json", std::move(json));
  files.emplace_back("report.json", result.report_json());
  files.emplace_back("report.html", result.report_html());
  return files;
}

absl::Status WriteResultFiles(const std::string& dir,
                              const v1::QuantizeResult& result) {
  // An empty folder name would put the files in the current folder (or, as
  // "/NAME", in the root): the caller must say where.
  if (absl::StripAsciiWhitespace(dir).empty()) {
    return absl::InvalidArgumentError("output folder: empty name");
  }
  ASSIGN_OR_RETURN(auto files, ResultFiles(result));
  for (const auto& [name, bytes] : files) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    absl::Status st = WriteFileAtomically(path, bytes);
    if (!st.ok()) {
      return absl::Status(st.code(),
                          absl::StrCat("writing ", path, ": ", st.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace quantd
