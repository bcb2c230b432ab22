// quantctl quantize MODEL.onnx --tpc NAME[@VERSION]|FILE --calib DIR --out DIR
//     [--server HOST:PORT] [--mp weights=F,activation=F,total=F,bops=F]
//     [--weights-bits N] [--gptq] [--threads N] [--eval DIR]
//     [--report-samples N|all]  (without --eval; default 16)
//     [--config QUANTIZATION_CONFIG_TEXTPROTO]
//     [--activation-storage int8|uint8|auto] [--export qdq,mctq]
//
// Runs a PTQ job in-process (or through a quantd server with --server) with
// a progress bar on stderr, then writes into DIR: model.qdq.onnx (and/or
// model.mctq.onnx, per --export; default qdq), quantized_graph.pb,
// quantized_graph.json, report.json and report.html, each atomically (temp file
// + rename). Options the job cannot honour are rejected by the job with
// UNIMPLEMENTED naming the option.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "clients/batch/job_files.h"
#include "clients/batch/mixed_precision_flags.h"
#include "clients/cpp/client.h"
#include "clients/quantctl/command.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/registry.h"
#include "core/util/status_macros.h"
#include "google/protobuf/text_format.h"
#include "nlohmann/json.hpp"

namespace quantd::quantctl {
namespace {

constexpr char kUsage[] =
    "quantize MODEL.onnx --tpc NAME[@VERSION]|FILE --calib DIR --out DIR "
    "[--server HOST:PORT] [--mp weights=F,activation=F,total=F,bops=F] "
    "[--weights-bits N] [--bits-override 'type:Conv=4,name:conv_3=2'] "
    "[--gptq] [--threads N] [--eval DIR] [--report-samples N|all] "
    "[--config 'z_threshold: 8 shift_negative_params_search: true'] "
    "[--activation-storage int8|uint8|auto] [--export qdq,mctq]";

struct Args {
  std::string model, tpc, calib, out, server, eval, mp;
  // FILTER[@weights|@activation]=BITS,... (mixed_precision_flags.h).
  std::string bits_override;
  // QuantizationConfig fields in protobuf text format (job.proto).
  std::string config;
  // ONNX formats (job_files.h ParseExportFormats); empty = qdq.
  std::vector<v1::ExportFormat> export_formats;
  int weights_bits = 0;
  // 8-bit activations of the QDQ model (job.proto ActivationStorage).
  v1::ActivationStorage activation_storage = v1::ACTIVATION_STORAGE_UNSPECIFIED;
  bool gptq = false;
  int threads = 0;  // 0 = hardware concurrency
  // Calibration samples the report evaluates without --eval: 0 = 16, -1 = all.
  int report_samples = 0;
  bool quiet = false;
};

int UsageError(const std::string& message) {
  return quantctl::UsageError("quantize", kUsage, message);
}

int ParseArgs(const std::vector<std::string>& args, Args* out) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* dst) { return TakeFlagValue(args, &i, dst); };
    std::string v;
    if (a == "--tpc") {
      if (!value(&out->tpc)) return UsageError("--tpc needs a value");
    } else if (a == "--calib") {
      if (!value(&out->calib)) return UsageError("--calib needs a folder");
    } else if (a == "--out") {
      if (!value(&out->out)) return UsageError("--out needs a folder");
    } else if (a == "--eval") {
      if (!value(&out->eval)) return UsageError("--eval needs a folder");
    } else if (a == "--server") {
      if (!value(&out->server)) return UsageError("--server needs HOST:PORT");
    } else if (a == "--mp") {
      if (!value(&out->mp)) return UsageError("--mp needs targets");
    } else if (a == "--bits-override") {
      if (!value(&out->bits_override)) {
        return UsageError("--bits-override needs FILTER=BITS[,...]");
      }
    } else if (a == "--config") {
      if (!value(&out->config)) {
        return UsageError("--config needs QuantizationConfig text");
      }
    } else if (a == "--export") {
      if (!value(&v) || !ParseExportFormats(v, &out->export_formats) ||
          out->export_formats.empty()) {
        return UsageError("--export needs qdq, mctq or qdq,mctq");
      }
    } else if (a == "--weights-bits") {
      if (!value(&v) || !absl::SimpleAtoi(v, &out->weights_bits) ||
          out->weights_bits < 1 || out->weights_bits > 16) {
        return UsageError("--weights-bits needs an integer in [1, 16]");
      }
    } else if (a == "--threads") {
      if (!value(&v) || !absl::SimpleAtoi(v, &out->threads) ||
          out->threads < 1 || out->threads > 1024) {
        return UsageError("--threads needs an integer in [1, 1024]");
      }
    } else if (a == "--report-samples") {
      if (!value(&v)) return UsageError("--report-samples needs a value");
      if (v == "all") {
        out->report_samples = -1;
      } else if (!absl::SimpleAtoi(v, &out->report_samples) ||
                 out->report_samples < 1) {
        return UsageError("--report-samples needs a count >= 1 or 'all'");
      }
    } else if (a == "--activation-storage") {
      std::string text;
      if (!value(&text) ||
          !ParseActivationStorage(text, &out->activation_storage)) {
        return UsageError("--activation-storage needs int8, uint8 or auto");
      }
    } else if (a == "--gptq") {
      out->gptq = true;
    } else if (a == "--quiet") {
      out->quiet = true;
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: quantctl %s\n", kUsage);
      return -1;
    } else if (!a.empty() && a[0] == '-') {
      return UsageError(absl::StrCat("unknown flag ", a));
    } else if (out->model.empty()) {
      out->model = a;
    } else {
      return UsageError(absl::StrCat("unexpected argument '", a, "'"));
    }
  }
  if (out->model.empty()) return UsageError("no model given");
  if (out->tpc.empty()) return UsageError("--tpc is required");
  if (out->calib.empty()) return UsageError("--calib is required");
  if (out->out.empty()) return UsageError("--out is required");
  return 0;
}

// A one-line progress bar on stderr, redrawn in place.
class ProgressBar final : public ProgressSink {
 public:
  explicit ProgressBar(bool quiet) : quiet_(quiet) {}
  void Report(const Progress& p) override {
    if (quiet_) return;
    absl::MutexLock lock(&mu_);
    const int width = 30;
    const int filled = static_cast<int>(std::lround(p.fraction * width));
    std::string bar(filled, '#');
    bar.resize(width, '-');
    std::fprintf(stderr, "\r%-10s [%s] %3d%% %-40.40s", p.stage.c_str(),
                 bar.c_str(), static_cast<int>(std::lround(p.fraction * 100)),
                 p.message.c_str());
    if (p.fraction >= 1.0) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }
  void Warn(absl::string_view message) override {
    absl::MutexLock lock(&mu_);
    std::fprintf(stderr, "\nwarning: %.*s\n", static_cast<int>(message.size()),
                 message.data());
  }

 private:
  bool quiet_;
  absl::Mutex mu_;
};

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

absl::StatusOr<v1::QuantizeResult> Run(const Args& args) {
  ASSIGN_OR_RETURN(
      v1::QuantizeRequest request,
      BuildQuantizeRequest({.model = args.model,
                            .calib = args.calib,
                            .eval = args.eval,
                            .tpc = args.tpc,
                            .mp = args.mp,
                            .weights_bits = args.weights_bits,
                            .activation_storage = args.activation_storage,
                            .gptq = args.gptq,
                            .threads = args.threads,
                            .report_samples = args.report_samples,
                            .export_formats = args.export_formats}));
  if (!args.bits_override.empty()) {
    RETURN_IF_ERROR(ParseBitWidthOverrides(args.bits_override,
                                           request.mutable_mixed_precision()));
  }

  if (!args.config.empty()) {
    v1::QuantizationConfig config;
    if (!google::protobuf::TextFormat::ParseFromString(args.config, &config)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--config: not QuantizationConfig text format (fields of "
          "proto/quantd/v1/job.proto, e.g. 'z_threshold: 8'): ",
          args.config));
    }
    request.mutable_quantization()->MergeFrom(config);
  }

  ProgressBar bar(args.quiet);
  if (!args.server.empty()) {
    ASSIGN_OR_RETURN(auto client,
                     client::Client::Create({.target = args.server}));
    return client->Quantize(std::move(request), [&](const v1::JobEvent& e) {
      if (e.has_progress()) {
        bar.Report({e.progress().stage(), e.progress().fraction(),
                    e.progress().message()});
      } else if (e.has_warning()) {
        bar.Warn(e.warning().message());
      }
    });
  }
  TpcRegistry registry;
  RETURN_IF_ERROR(registry.AddBuiltins());
  const int threads = args.threads > 0
                          ? args.threads
                          : std::max(1u, std::thread::hardware_concurrency());
  // The caller's thread works in ParallelFor too: N threads = N-1 workers.
  ThreadPool pool(threads - 1);
  CancellationToken cancel;
  JobContext context;
  context.registry = &registry;
  context.pool = &pool;
  context.cancel = &cancel;
  context.progress = &bar;
  return RunQuantizeJob(request, context);
}

int RunQuantize(const std::vector<std::string>& argv) {
  Args args;
  if (int rc = ParseArgs(argv, &args); rc != 0) return rc < 0 ? 0 : rc;
  auto result = Run(args);
  if (!result.ok()) {
    std::fprintf(stderr, "\nquantctl quantize: %s: %s\n",
                 absl::StatusCodeToString(result.status().code()).c_str(),
                 std::string(result.status().message()).c_str());
    return 1;
  }
  absl::Status st = WriteResultFiles(args.out, *result);
  if (!st.ok()) {
    std::fprintf(stderr, "quantctl quantize: %s\n",
                 std::string(st.message()).c_str());
    return 1;
  }
  PrintSummary(*result, args.out);
  return 0;
}

}  // namespace

QUANTCTL_COMMAND(quantize, kUsage, RunQuantize);

}  // namespace quantd::quantctl
