// quantctl quantize MODEL.onnx --tpc NAME[@VERSION]|FILE --calib DIR --out DIR
//     [job options] [--server HOST:PORT [TLS/token flags] ] [--deadline D]
//     [--force] [--quiet]
//
// Runs a PTQ job in-process (or through a quantd server with --server) and
// writes into DIR: model.qdq.onnx (and/or model.mctq.onnx, per --export;
// default qdq), quantized_graph.pb, quantized_graph.json, report.json and
// report.html, each atomically (temp file + rename). DIR is checked before
// the job: a non-empty folder needs --force. The job options are the table
// of clients/batch/job_options.h (the same as batch manifests'). Options the
// job cannot honour are rejected by the job with UNIMPLEMENTED naming them.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "clients/batch/job_files.h"
#include "clients/batch/job_options.h"
#include "clients/quantctl/channel_flags.h"
#include "clients/quantctl/command.h"
#include "clients/quantctl/progress_bar.h"
#include "clients/quantctl/run_job.h"
#include "core/util/status_macros.h"
#include "nlohmann/json.hpp"

namespace quantd::quantctl {
namespace {

struct Args {
  JobFiles job;  // model, tpc, calib, eval and the job options
  std::string out;
  client::ChannelOptions channel;  // target = --server
  absl::Duration deadline = absl::InfiniteDuration();
  bool force = false;
  bool quiet = false;
};

FlagSet Flags(Args* a) {
  FlagSet f("quantize",
            "MODEL.onnx --tpc NAME[@VERSION]|FILE --calib DIR --out DIR",
            "Quantizes an ONNX model (post-training quantization, optionally "
            "mixed precision and GPTQ) in-process, or on a quantd server with "
            "--server, and writes the QDQ model and the reports into --out.");
  f.Positional("MODEL.onnx", "the float ONNX model", &a->job.model);
  f.String("tpc", "NAME[@VERSION]|FILE",
           "target platform: a registry name (quantctl tpc list) or a "
           ".json/.textproto file",
           &a->job.tpc, {.required = true});
  f.String("calib", "DIR|generated:N,..",
           "calibration sample set (one .npy per input), or N images "
           "generated from the model's BatchNormalization statistics "
           "(docs/data_generation.md)",
           &a->job.calib, {.required = true});
  f.String("out", "DIR",
           "output folder; must be empty or absent unless --force", &a->out,
           {.required = true});
  f.String("eval", "DIR",
           "held-out sample set the report evaluates on (default: calibration)",
           &a->job.eval);
  for (const JobOption& o : JobOptions()) {
    if (!o.flag) continue;
    JobFiles* job = &a->job;
    f.Add(
        {o.name,
         o.value_name,
         o.help,
         [job, apply = o.apply](const std::string& v) { return apply(v, job); },
         {.aliases = {JobOptionKey(o)}}});
  }
  f.Bool("force", "write into a non-empty --out (replacing quantize's files)",
         &a->force);
  f.Bool("quiet", "no progress on stderr (warnings and errors still)",
         &a->quiet);
  AddServerFlags(&f,
                 "run the job on a quantd server (dns:///NAME:PORT for all "
                 "replicas)",
                 &a->channel, &a->deadline);
  return f;
}

std::vector<FlagSet> FlagSets() {
  static Args unused;
  return {Flags(&unused)};
}

// --out before the job: absent, or an empty folder, or --force.
absl::Status CheckOutDir(const std::string& out, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(out, ec);
  if (!fs::exists(st)) return absl::OkStatus();
  if (!fs::is_directory(st)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--out ", out, ": exists and is not a folder"));
  }
  if (!force && !fs::is_empty(out, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--out ", out, ": not empty (--force overwrites its files)"));
  }
  return absl::OkStatus();
}

void PrintSummary(const v1::QuantizeResult& result, const std::string& dir) {
  std::printf("quantized with %s: output SQNR %.2f dB\n", result.tpc().c_str(),
              result.output_sqnr_db());
  auto report = nlohmann::json::parse(result.report_json(), nullptr, false);
  if (!report.is_discarded()) {
    for (const auto& o : report["outputs"]) {
      std::printf("  output %s:", o["name"].get<std::string>().c_str());
      if (o["sqnr_db"].is_number()) {
        std::printf(" SQNR %.2f dB", o["sqnr_db"].get<double>());
      }
      if (o["top1_agreement"].is_number()) {
        std::printf(", top-1 agreement %.2f%%",
                    100 * o["top1_agreement"].get<double>());
      }
      if (o["cosine"].is_number()) {
        std::printf(", cosine %.5f", o["cosine"].get<double>());
      }
      std::printf("\n");
    }
    int quantized = 0, layers = 0;
    for (const auto& l : report["layers"]) {
      ++layers;
      quantized += l["weights_bits"].get<int>() > 0 ||
                   l["activation_bits"].get<int>() > 0;
    }
    const auto& ru = report["resource_utilization"];
    const auto& base = report["baseline_8bit"];
    std::printf(
        "  %d of %d nodes quantized; weights %.0f bytes (8-bit "
        "baseline %.0f), activations %.0f bytes\n",
        quantized, layers,
        ru["weights_memory_bytes"].is_number()
            ? ru["weights_memory_bytes"].get<double>()
            : 0.0,
        base["weights_memory_bytes"].is_number()
            ? base["weights_memory_bytes"].get<double>()
            : 0.0,
        ru["activation_memory_bytes"].is_number()
            ? ru["activation_memory_bytes"].get<double>()
            : 0.0);
  }
  std::string models;
  if (!result.qdq_onnx().empty()) models += "model.qdq.onnx, ";
  if (!result.mctq_onnx().empty()) models += "model.mctq.onnx, ";
  std::printf(
      "wrote %s/{%squantized_graph.pb, quantized_graph.json, report.json, "
      "report.html}\n",
      dir.c_str(), models.c_str());
}

// With --force over an earlier run: a model file this run did not write
// (--export changed) would pair an old model with the new report.
void RemoveStaleModels(const std::string& out,
                       const v1::QuantizeResult& result) {
  std::error_code ec;
  if (result.qdq_onnx().empty()) {
    std::filesystem::remove(std::filesystem::path(out) / "model.qdq.onnx", ec);
  }
  if (result.mctq_onnx().empty()) {
    std::filesystem::remove(std::filesystem::path(out) / "model.mctq.onnx", ec);
  }
}

// The report's warnings that the job did not stream (e.g. a --bits-override
// that matches no node), on stderr.
void PrintReportWarnings(const v1::QuantizeResult& result, ProgressBar* bar) {
  auto report = nlohmann::json::parse(result.report_json(), nullptr, false);
  if (report.is_discarded() || !report["warnings"].is_array()) return;
  for (const auto& w : report["warnings"]) {
    if (w.is_string()) bar->Warn(w.get<std::string>());
  }
}

int RunQuantize(const std::vector<std::string>& argv) {
  Args args;
  const FlagSet flags = Flags(&args);
  if (int rc = flags.ParseOrExit(argv); rc >= 0) return rc;
  absl::Status usable = CheckOutDir(args.out, args.force);
  if (usable.ok() && args.channel.target.empty() &&
      AnyChannelFlag(args.channel)) {
    usable = absl::InvalidArgumentError(
        "TLS and token flags need --server (the job runs in-process without "
        "it)");
  }
  if (!usable.ok()) {
    std::fprintf(stderr, "quantctl quantize: %s\n",
                 std::string(usable.message()).c_str());
    return 2;
  }
  ProgressBar bar(stderr, isatty(2) != 0, args.quiet);
  auto result = RunJob(args.job, args.channel, args.deadline, &bar);
  bar.Finish();
  if (!result.ok()) return PrintJobFailure("quantize", result.status());
  PrintReportWarnings(*result, &bar);
  absl::Status st = WriteResultFiles(args.out, *result);
  if (!st.ok()) {
    std::fprintf(stderr, "quantctl quantize: %s\n",
                 std::string(st.message()).c_str());
    return 1;
  }
  RemoveStaleModels(args.out, *result);
  PrintSummary(*result, args.out);
  return 0;
}

}  // namespace

QUANTCTL_COMMAND(quantize,
                 "quantize an ONNX model (in-process or on a quantd server)",
                 RunQuantize, FlagSets);

}  // namespace quantd::quantctl
