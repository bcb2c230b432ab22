// quantctl analyze MODEL.onnx --tpc NAME[@VERSION]|FILE --calib DIR
//     [--eval DIR] [job options] [--top N] [--out DIR]
//     [--server HOST:PORT [TLS/token flags]] [--deadline D] [--quiet]
//
// Runs the quantization job with the per-layer sensitivity analysis
// (QuantizeRequest.sensitivity_analysis) and prints the most sensitive
// layers: the model output's SQNR when only that layer is quantized and
// when only it is left float. --out also writes the job's files (as
// `quantctl quantize`, into an absent or empty folder).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
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
#include "nlohmann/json.hpp"

namespace quantd::quantctl {
namespace {

struct Args {
  JobFiles job;
  std::string out;
  int top = 20;
  client::ChannelOptions channel;
  absl::Duration deadline = absl::InfiniteDuration();
  bool quiet = false;
};

FlagSet Flags(Args* a) {
  FlagSet f("analyze", "MODEL.onnx --tpc NAME[@VERSION]|FILE --calib DIR",
            "Quantizes the model with a per-layer sensitivity analysis (as "
            "MCT's Xquant / AIMET's QuantAnalyzer) and prints the layers "
            "whose quantization costs the most output SQNR.");
  f.Positional("MODEL.onnx", "the float ONNX model", &a->job.model);
  f.String("tpc", "NAME[@VERSION]|FILE",
           "target platform: a registry name (quantctl tpc list) or a "
           ".json/.textproto file",
           &a->job.tpc, {.required = true});
  f.String("calib", "DIR", "calibration sample set (one .npy per input)",
           &a->job.calib, {.required = true});
  f.String("eval", "DIR",
           "held-out sample set the analysis runs on (default: the first "
           "--report-samples calibration samples)",
           &a->job.eval);
  for (const JobOption& o : JobOptions()) {
    if (!o.flag) continue;
    if (o.name == "analyze") continue;  // always on here
    JobFiles* job = &a->job;
    f.Add(
        {o.name,
         o.value_name,
         o.help,
         [job, apply = o.apply](const std::string& v) { return apply(v, job); },
         {.aliases = {JobOptionKey(o)}}});
  }
  f.Int("top", "layers to print, most sensitive first (default: 20)", 1, 100000,
        &a->top);
  f.String("out", "DIR",
           "also write the job's files here (absent or empty folder)", &a->out);
  f.Bool("quiet", "no progress on stderr (warnings and errors still)",
         &a->quiet);
  AddServerFlags(&f, "run the job on a quantd server", &a->channel,
                 &a->deadline);
  return f;
}

std::vector<FlagSet> FlagSets() {
  static Args unused;
  return {Flags(&unused)};
}

// A figure of report.json's `sensitivity` (null: exact, or for the
// estimate's only-float figure, not estimated).
std::string Db(const nlohmann::json& v, bool estimated_only_float = false) {
  if (estimated_only_float) return "-";
  if (!v.is_number()) return "exact";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", v.get<double>());
  return buf;
}

// The `sensitivity` rows of report.json, with each node's op type.
void PrintTable(const v1::QuantizeResult& result, int top) {
  auto report = nlohmann::json::parse(result.report_json(), nullptr, false);
  if (report.is_discarded()) return;
  std::printf("quantized with %s: output SQNR %.2f dB on %d samples\n",
              result.tpc().c_str(), result.output_sqnr_db(),
              report["num_evaluation_samples"].get<int>());
  const auto& rows = report["sensitivity"];
  if (!rows.is_array() || rows.empty()) {
    std::printf("no quantized layer to analyse\n");
    return;
  }
  std::map<std::string, std::string> op_type;
  for (const auto& l : report["layers"]) {
    op_type[l["node"].get<std::string>()] = l["op_type"].get<std::string>();
  }
  const int n = std::min<int>(top, static_cast<int>(rows.size()));
  const bool estimated = rows[0].value("method", "") == "estimate";
  std::printf(
      "%d most sensitive of %zu layers (output SQNR, dB: only this layer "
      "quantized | all but this layer quantized; %s):\n",
      n, rows.size(),
      estimated ? "first-order estimate, --analyze-method exact for the "
                  "figures themselves"
                : "exact");
  std::printf("  %-40s %-18s %14s %14s\n", "node", "op", "only quantized",
              "only float");
  for (int i = 0; i < n; ++i) {
    const std::string node = rows[i]["node"].get<std::string>();
    std::printf("  %-40s %-18s %14s %14s\n", node.c_str(),
                op_type[node].c_str(),
                Db(rows[i]["sqnr_only_quantized_db"]).c_str(),
                Db(rows[i]["sqnr_only_float_db"], estimated).c_str());
  }
}

absl::Status CheckOut(const std::string& out) {
  std::error_code ec;
  if (out.empty() || !std::filesystem::exists(out, ec)) {
    return absl::OkStatus();
  }
  if (!std::filesystem::is_directory(out, ec) ||
      !std::filesystem::is_empty(out, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--out ", out, ": not an empty folder"));
  }
  return absl::OkStatus();
}

int RunAnalyze(const std::vector<std::string>& argv) {
  Args args;
  const FlagSet flags = Flags(&args);
  if (int rc = flags.ParseOrExit(argv); rc >= 0) return rc;
  args.job.analyze = true;
  const absl::Status usable = CheckOut(args.out);
  if (!usable.ok()) {
    std::fprintf(stderr, "quantctl analyze: %s\n",
                 std::string(usable.message()).c_str());
    return 2;
  }
  ProgressBar bar(stderr, isatty(2) != 0, args.quiet);
  auto result = RunJob(args.job, args.channel, args.deadline, &bar);
  bar.Finish();
  if (!result.ok()) return PrintJobFailure("analyze", result.status());
  if (!args.out.empty()) {
    absl::Status st = WriteResultFiles(args.out, *result);
    if (!st.ok()) {
      std::fprintf(stderr, "quantctl analyze: %s\n",
                   std::string(st.message()).c_str());
      return 1;
    }
  }
  PrintTable(*result, args.top);
  return 0;
}

}  // namespace

QUANTCTL_COMMAND(analyze,
                 "per-layer sensitivity: the layers whose quantization costs "
                 "the most output SQNR",
                 RunAnalyze, FlagSets);

}  // namespace quantd::quantctl
