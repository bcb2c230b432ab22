// quantd._quantd: the in-process engine for the `quantd` Python package
// (clients/python/quantd). Bytes in, bytes out: the package builds the
// QuantizeRequest with its generated quantd.v1 stubs, this module runs it
// and turns the job options' text forms into request fields with the code
// quantctl uses (clients/batch/job_files.h, mixed_precision_flags.h).
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "clients/batch/job_files.h"
#include "clients/batch/mixed_precision_flags.h"
#include "clients/python/module/job_runner.h"
#include "core/tpc/json_io.h"
#include "google/protobuf/text_format.h"
#include "pybind11/pybind11.h"
#include "pybind11/stl.h"

namespace py = pybind11;

namespace quantd::python {
namespace {

// The status with `field` in front of its message, in place of the command
// line flag that quantctl's parsers name ("--mp: ...").
void Check(const absl::Status& status, absl::string_view field) {
  if (status.ok()) return;
  absl::string_view message = status.message();
  if (absl::StartsWith(message, "--")) {
    const size_t colon = message.find(": ");
    if (colon != absl::string_view::npos) message.remove_prefix(colon + 2);
  }
  ThrowStatus(absl::Status(status.code(), absl::StrCat(field, ": ", message)));
}

[[noreturn]] void Invalid(absl::string_view field, absl::string_view message) {
  ThrowStatus(absl::InvalidArgumentError(absl::StrCat(field, ": ", message)));
}

// The job options as `quantctl quantize` takes them, into a QuantizeRequest
// without model or samples (the caller merges it). "" / 0 = default.
py::bytes RequestOptions(const std::string& tpc, const std::string& mp,
                         const std::string& bits_override, int weights_bits,
                         const std::string& activation_storage,
                         const std::string& export_formats, bool gptq,
                         int threads, int report_samples,
                         const std::string& config) {
  v1::QuantizeRequest request;
  if (tpc.empty()) Invalid("tpc", "required (\"name@version\" or a file)");
  if (IsTpcFile(tpc)) {
    auto loaded = tpc::LoadTpcFile(tpc);
    Check(loaded.status(), "tpc");
    *request.mutable_tpc()->mutable_inline_tpc() = *std::move(loaded);
  } else {
    request.mutable_tpc()->set_name(tpc);
  }
  v1::MixedPrecisionConfig* mpc = request.mutable_mixed_precision();
  if (!mp.empty()) Check(ParseMpTargets(mp, mpc), "mp");
  if (!bits_override.empty()) {
    Check(ParseBitWidthOverrides(bits_override, mpc), "bits_override");
  }
  if (weights_bits < 0 || weights_bits > 16) {
    Invalid("weights_bits", "needs an integer in [1, 16]");
  }
  if (weights_bits > 0) mpc->set_kernel_weights_bits(weights_bits);
  v1::ActivationStorage storage;
  if (!ParseActivationStorage(activation_storage, &storage)) {
    Invalid("activation_storage", "needs int8, uint8 or auto");
  }
  if (storage != v1::ACTIVATION_STORAGE_UNSPECIFIED) {
    request.mutable_export_options()->set_activation_storage(storage);
  }
  std::vector<v1::ExportFormat> formats;
  if (!ParseExportFormats(export_formats, &formats)) {
    Invalid("export", "needs qdq, mctq or qdq,mctq");
  }
  for (v1::ExportFormat f : formats) {
    request.mutable_export_options()->add_formats(f);
  }
  if (gptq) request.mutable_gptq()->set_enabled(true);
  if (threads < 0 || threads > 1024) {
    Invalid("threads", "needs an integer in [1, 1024]");
  }
  request.set_num_threads(threads);
  if (report_samples < -1) Invalid("report_samples", "needs a count or -1");
  request.set_report_samples(report_samples);
  if (!config.empty() && !google::protobuf::TextFormat::ParseFromString(
                             config, request.mutable_quantization())) {
    Invalid("config",
            "not QuantizationConfig text format (fields of "
            "proto/quantd/v1/job.proto, e.g. 'z_threshold: 8')");
  }
  return py::bytes(request.SerializeAsString());
}

// The files `quantctl quantize --out DIR` writes, written the same way.
std::vector<std::string> WriteResult(const std::string& dir,
                                     const std::string& result_bytes) {
  v1::QuantizeResult result;
  if (!result.ParseFromString(result_bytes)) {
    Invalid("result", "not a QuantizeResult");
  }
  auto files = ResultFiles(result);
  Check(files.status(), "result");
  Check(WriteResultFiles(dir, result), "save");
  std::vector<std::string> names;
  for (const auto& [name, bytes] : *files) names.push_back(name);
  return names;
}

}  // namespace

PYBIND11_MODULE(_quantd, m) {
  m.doc() = "quantd's in-process engine (use the quantd package instead)";
  m.def("run_job", &RunJob, py::arg("request"), py::arg("on_event"),
        "Runs a serialized QuantizeRequest; returns the serialized "
        "QuantizeResult. Releases the GIL while the job runs.");
  m.def("request_options", &RequestOptions, py::arg("tpc"), py::arg("mp"),
        py::arg("bits_override"), py::arg("weights_bits"),
        py::arg("activation_storage"), py::arg("export_formats"),
        py::arg("gptq"), py::arg("threads"), py::arg("report_samples"),
        py::arg("config"),
        "The job options' text forms as a serialized QuantizeRequest.");
  m.def("write_result", &WriteResult, py::arg("dir"), py::arg("result"),
        "Writes the result files into dir; returns their names.");
}

}  // namespace quantd::python
