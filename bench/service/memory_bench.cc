// Admission's memory estimate against the measured peak, per real model:
// each job runs alone in a fresh quantd (bench/service/one_job_peak.h). The
// estimate is what admission reserves once the model is parsed
// (EstimateJobMemoryBytes with the compute threads plus the job's worker in
// flight). Target: within 25% for every model.
//
//   memory_bench [--compute_threads=N] [--max_samples=N] [--models=a,b]
//                [--mobilenet=FILE.onnx --mobilenet_samples=DIR] [--gptq=1]
//                [--analyze=1] [--target_sqnr=DB]
// Models from $QUANTD_CACHE_DIR (scripts/fetch_models.sh).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/bench_util.h"
#include "bench/service/one_job_peak.h"
#include "clients/cpp/client.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/preflight.h"
#include "core/pipeline/job/samples.h"
#include "core/pipeline/memory/job_memory.h"
#include "core/tpc/registry.h"
#include "tests/integration/server_process.h"

namespace quantd {
namespace {

using bench::IntFlag;
using bench::StringFlag;

// The model's job with at most `max_samples` calibration samples from
// `samples_dir`, or an error.
absl::StatusOr<v1::QuantizeRequest> ModelJob(const std::string& model_path,
                                             const std::string& samples_dir,
                                             int max_samples) {
  auto bytes = ReadFileLimited(model_path, int64_t{1} << 31);
  if (!bytes.ok()) return bytes.status();
  auto model = ImportOnnx(*bytes);
  if (!model.ok()) return model.status();
  std::vector<std::string> inputs;
  for (const auto& in : model->graph.inputs) inputs.push_back(in.name);
  auto set = ReadSampleSet(samples_dir, inputs);
  if (!set.ok()) return set.status();
  v1::QuantizeRequest request;
  request.set_onnx_model(*std::move(bytes));
  request.mutable_tpc()->set_name("imx500");
  for (const auto& sample : set->samples) {
    if (request.calibration_samples_size() >= max_samples) break;
    v1::Sample* s = request.add_calibration_samples();
    for (const auto& [name, t] : sample) {
      *s->add_inputs() = TensorToSampleProto(t, name);
    }
  }
  return request;
}

struct Row {
  std::string name;
  int samples = 0;
  double predicted_mib = 0, measured_mib = 0;
  // The estimate's terms: model and sample bytes; a sample's activations,
  // all of them and the most alive at once.
  double model_mib = 0, samples_mib = 0, activations_mib = 0, live_mib = 0;
};

// One job in a fresh server; false when it could not run.
bool Measure(const std::string& name, const v1::QuantizeRequest& request,
             int compute_threads, Row* row) {
  const double measured = bench::OneJobPeakMib(
      compute_threads, [&](const std::string& target) -> absl::Status {
        auto client = client::Client::Create({.target = target});
        if (!client.ok()) return client.status();
        return (*client)->Quantize(request).status();
      });
  if (measured < 0) {
    std::fprintf(stderr, "%s: failed\n", name.c_str());
    return false;
  }
  row->name = name;
  row->samples = request.calibration_samples_size();
  row->predicted_mib =
      EstimateJobMemoryBytes(request, JobLimits{}, compute_threads + 1) /
      1048576.0;
  row->measured_mib = measured;
  row->model_mib = request.onnx_model().size() / 1048576.0;
  int64_t sample_bytes = 0;
  for (const auto& s : request.calibration_samples()) {
    for (const auto& t : s.inputs()) sample_bytes += t.raw_data().size();
  }
  row->samples_mib = sample_bytes / 1048576.0;
  tpc::TpcRegistry registry;
  if (registry.AddBuiltins().ok()) {
    auto input = PreflightJob(request, registry, JobLimits{});
    if (input.ok()) {
      row->activations_mib = input->activations.total / 1048576.0;
      row->live_mib = input->activations.live / 1048576.0;
    }
  }
  return true;
}

int Run(int argc, char** argv) {
  const int compute_threads = IntFlag(argc, argv, "compute_threads", 1);
  const int max_samples = IntFlag(argc, argv, "max_samples", 32);
  // --gptq=1: the same jobs with GPTQ (default GptqConfig); --analyze=1
  // with the per-layer sensitivity analysis; --target_sqnr=DB with a
  // best-effort quality target.
  const bool gptq = IntFlag(argc, argv, "gptq", 0) != 0;
  const bool analyze = IntFlag(argc, argv, "analyze", 0) != 0;
  const int target_sqnr = IntFlag(argc, argv, "target_sqnr", 0);
  const char* cache_env = std::getenv("QUANTD_CACHE_DIR");
  const std::string cache =
      cache_env != nullptr ? cache_env : QUANTD_SOURCE_ROOT "/.cache";
  struct Source {
    std::string name, model, samples;
  };
  std::vector<Source> sources;
  const std::string only = StringFlag(argc, argv, "models", "");
  const std::vector<std::string> wanted = absl::StrSplit(only, ',');
  for (const char* name : {"ppocr_cls", "ppocr_det", "ppocr_rec",
                           "oww_embedding", "oww_melspectrogram",
                           "oww_hey_jarvis", "silero_vad", "silero_vad_v5"}) {
    if (!only.empty() && absl::c_find(wanted, name) == wanted.end()) continue;
    sources.push_back({name, cache + "/models/" + name + ".onnx",
                       cache + "/samples/" + name + "/calib"});
  }
  if (const std::string mnv2 = StringFlag(argc, argv, "mobilenet", "");
      !mnv2.empty()) {
    sources.push_back({"mobilenet_v2", mnv2,
                       StringFlag(argc, argv, "mobilenet_samples", "")});
  }
  std::printf(
      "model               samples  predicted  measured   error   (model, "
      "samples, a sample's activations: all, live, MiB)\n");
  bool all_within = true;
  for (const Source& source : sources) {
    auto request = ModelJob(source.model, source.samples, max_samples);
    if (!request.ok()) {
      std::printf("%-18s skipped: %s\n", source.name.c_str(),
                  request.status().ToString().c_str());
      continue;
    }
    if (gptq) request->mutable_gptq()->set_enabled(true);
    if (analyze) request->set_sensitivity_analysis(true);
    if (target_sqnr != 0) {
      v1::QualityTarget* t = request->mutable_quality_target();
      t->set_metric(v1::QualityTarget::METRIC_SQNR);
      t->set_value(target_sqnr);
      t->set_best_effort(true);
    }
    Row row;
    if (!Measure(source.name, *request, compute_threads, &row)) return 1;
    const double error = row.predicted_mib / row.measured_mib - 1;
    all_within = all_within && std::fabs(error) <= 0.25;
    std::printf(
        "%-18s %7d %7.1f MiB %7.1f MiB %+6.1f%%   (%.1f, %.1f, %.1f, %.1f)\n",
        row.name.c_str(), row.samples, row.predicted_mib, row.measured_mib,
        error * 100, row.model_mib, row.samples_mib, row.activations_mib,
        row.live_mib);
    std::fflush(stdout);
  }
  std::printf("every model within 25%%: %s\n", all_within ? "yes" : "no");
  return 0;
}

}  // namespace
}  // namespace quantd

int main(int argc, char** argv) { return quantd::Run(argc, argv); }
