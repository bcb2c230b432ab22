// quantd._quantd: the in-process engine for the `quantd` Python package
// (clients/python/quantd). Bytes in, bytes out: the package builds the
// QuantizeRequest with its generated quantd.v1 stubs, this module runs it
// and turns the job options' text forms into request fields through the
// table quantctl and batch manifests use (clients/batch/job_options.h).
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "clients/batch/job_files.h"
#include "clients/batch/job_options.h"
#include "clients/python/module/job_runner.h"
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

// The job options table (clients/batch/job_options.h), the one definition
// of the Python API's keyword arguments: (keyword, value name, help) each.
std::vector<std::tuple<std::string, std::string, std::string>> OptionTable() {
  std::vector<std::tuple<std::string, std::string, std::string>> table;
  for (const JobOption& o : JobOptions()) {
    table.emplace_back(JobOptionKey(o), o.value_name, o.help);
  }
  return table;
}

// The TPC and the job options, (keyword, text form) each as quantctl and
// batch manifests take them, into a QuantizeRequest without model or
// samples (the caller merges it). Errors name the keyword.
py::bytes RequestOptions(
    const std::string& tpc,
    const std::vector<std::pair<std::string, std::string>>& options) {
  if (tpc.empty()) Invalid("tpc", "required (\"name@version\" or a file)");
  JobFiles job;
  job.tpc = tpc;
  for (const auto& [keyword, text] : options) {
    const JobOption* option = FindJobOption(keyword);
    if (option == nullptr) Invalid(keyword, "not a job option");
    Check(option->apply(text, &job), JobOptionKey(*option));
  }
  v1::QuantizeRequest request;
  Check(ApplyJobSettings(job, &request), "tpc");  // the options are valid
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
  m.def("job_options", &OptionTable,
        "The job options (clients/batch/job_options.h): (keyword, value "
        "name, help) each; a switch has no value name.");
  m.def("request_options", &RequestOptions, py::arg("tpc"), py::arg("options"),
        "The TPC and [(keyword, text form)] of job options as a serialized "
        "QuantizeRequest.");
  m.def("write_result", &WriteResult, py::arg("dir"), py::arg("result"),
        "Writes the result files into dir; returns their names.");
}

}  // namespace quantd::python
