// A quantization job as files on disk, shared by `quantctl quantize` and
// `quantctl batch`: the request is built from a model file, sample folders
// and a TPC (name or file); the result becomes the five output files.
//
//   JobFiles files{.model = "m.onnx", .calib = "calib/", .tpc = "imx500@4"};
//   ASSIGN_OR_RETURN(v1::QuantizeRequest request, BuildQuantizeRequest(files));
//   ... run it ...
//   RETURN_IF_ERROR(WriteResultFiles(out_dir, result));
#ifndef QUANTD_CLIENTS_BATCH_JOB_FILES_H_
#define QUANTD_CLIENTS_BATCH_JOB_FILES_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "quantd/v1/job.pb.h"

namespace quantd {

struct JobFiles {
  std::string model;  // ONNX file
  // Sample-set folder, or `generated:N,...` (core/datagen/calib_spec.h):
  // the request's generated_calibration.
  std::string calib;
  std::string eval;  // held-out sample-set folder (optional)
  std::string tpc;   // "name[@version]" or a .json/.textproto file
  // The job options (job_options.h) hold their text forms here.
  // Mixed-precision targets as `quantctl quantize --mp` takes them
  // (mixed_precision_flags.h); empty = none.
  std::string mp;
  // `--mp-config`: MixedPrecisionConfig fields in text format.
  std::string mp_config;
  int weights_bits = 0;  // 0 = TPC default
  v1::ActivationStorage activation_storage = v1::ACTIVATION_STORAGE_UNSPECIFIED;
  v1::WeightStorage weight_storage = v1::WEIGHT_STORAGE_UNSPECIFIED;
  bool gptq = false;
  // `--gptq-config`: GptqConfig fields in text format (implies --gptq).
  std::string gptq_config;
  bool analyze = false;  // QuantizeRequest.sensitivity_analysis
  v1::SensitivityAnalysisMethod analyze_method =
      v1::SENSITIVITY_ANALYSIS_METHOD_UNSPECIFIED;
  bool strict = false;  // QuantizeRequest.strict
  int threads = 0;      // 0 = server / hardware default
  // QuantizeRequest.report_samples: 0 = 16, -1 = all.
  int report_samples = 0;
  // ONNX formats to write (ParseExportFormats); empty = QDQ only.
  std::vector<v1::ExportFormat> export_formats;
  // `--bits-override` and `--keep-float` filters (mixed_precision_flags.h)
  // and `--config` QuantizationConfig text; empty = none.
  std::string bits_override;
  // QuantizeRequest.quality_target: `--target-sqnr DB`, `--target-cosine C`
  // and `--target-metric sqnr|cosine` (which of the two, when both are
  // given); unset = no target.
  std::optional<double> target_sqnr, target_cosine;
  std::string target_metric;
  bool target_best_effort = false;  // `--target-best-effort`
  bool target_skip_gptq = false;    // `--target-skip-gptq`
  std::string keep_float;
  std::string config;
  // `N[,shape=CxHxW,...]`: the job generates its calibration data
  // (QuantizeRequest.generated_calibration), as `--calib generated:...`;
  // the Python API's generated_calibration=. Empty = none.
  std::string generated_calibration;
};

// Examples the text-format options' errors show.
inline constexpr absl::string_view kConfigExample = "z_threshold: 8";
inline constexpr absl::string_view kGptqConfigExample = "n_epochs: 20";
inline constexpr absl::string_view kMpConfigExample = "num_of_images: 8";

// `text` in protobuf text format into `out` (a message of
// proto/quantd/v1/job.proto); the error names the message type and shows
// `example`.
absl::Status ParseTextFormat(const std::string& text, absl::string_view example,
                             google::protobuf::Message* out);

// Reads the model (to learn its input names), the samples and a TPC file.
// Errors name the file or flag at fault.
absl::StatusOr<v1::QuantizeRequest> BuildQuantizeRequest(const JobFiles& files);

// The part of BuildQuantizeRequest that reads no model or samples: the TPC
// (a file is loaded) and the job options, into `request`'s fields. The
// Python API builds its requests with it.
absl::Status ApplyJobSettings(const JobFiles& files,
                              v1::QuantizeRequest* request);

// `--mp` targets (ParseMixedPrecisionTargets); errors quote the bad part.
absl::Status ParseMpTargets(const std::string& spec,
                            v1::MixedPrecisionConfig* mp);

// "int8" | "uint8" | "auto" | "" (default: int8) -> the enum; false for
// anything else.
bool ParseActivationStorage(const std::string& text,
                            v1::ActivationStorage* storage);
// "int8" | "uint8" | "" (default: int8) -> the enum; false for anything
// else.
bool ParseWeightStorage(const std::string& text, v1::WeightStorage* storage);

// "qdq", "mctq", "qdq,mctq" (',', ';' or '+' between names; "" = QDQ only)
// -> the formats, each once; false for an unknown name.
bool ParseExportFormats(const std::string& text,
                        std::vector<v1::ExportFormat>* formats);

// A TPC given as a file (known extension or a path with '/') rather than a
// registry name.
bool IsTpcFile(const std::string& tpc);

// The files a result is written as, in this order: model.qdq.onnx (unless
// the job skipped it), model.mctq.onnx (if the job wrote it),
// quantized_graph.pb, quantized_graph.json,
// report.json, report.html. Protos are serialized deterministically.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ResultFiles(
    const v1::QuantizeResult& result);

// Writes ResultFiles into `dir`, each atomically (temp file + rename).
absl::Status WriteResultFiles(const std::string& dir,
                              const v1::QuantizeResult& result);

}  // namespace quantd

#endif  // QUANTD_CLIENTS_BATCH_JOB_FILES_H_
