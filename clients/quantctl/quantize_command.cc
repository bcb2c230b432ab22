// quantctl quantize MODEL.onnx --tpc NAME[@VERSION]|FILE --calib DIR --out DIR
//     [--server HOST:PORT] [--mp weights=F,activation=F,total=F,bops=F]
//     [--weights-bits N] [--gptq] [--threads N] [--eval DIR]
//
// Runs a PTQ job in-process (or through a quantd server with --server) with
// a progress bar on stderr, then writes into DIR: model.qdq.onnx,
// quantized_graph.pb, quantized_graph.json, report.json and report.html,
// each atomically (temp file + rename). Options the job cannot honour are
// rejected by the job with UNIMPLEMENTED naming the option.
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
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "clients/cpp/client.h"
#include "clients/quantctl/command.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/mixed_precision_flags.h"
#include "core/pipeline/proto_output.h"
#include "core/pipeline/quantize_job.h"
#include "core/pipeline/samples.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/json_io.h"
#include "core/tpc/registry.h"
#include "core/util/status_macros.h"
#include "nlohmann/json.hpp"

namespace quantd::quantctl {
namespace {

constexpr char kUsage[] =
    "quantize MODEL.onnx --tpc NAME[@VERSION]|FILE --calib DIR --out DIR "
    "[--server HOST:PORT] [--mp weights=F,activation=F,total=F,bops=F] "
    "[--weights-bits N] [--bits-override 'type:Conv=4,name:conv_3=2'] "
    "[--gptq] [--threads N] [--eval DIR]";

struct Args {
  std::string model, tpc, calib, out, server, eval, mp;
  // FILTER[@weights|@activation]=BITS,... (mixed_precision_flags.h).
  std::string bits_override;
  int weights_bits = 0;
  bool gptq = false;
  int threads = 0;  // 0 = hardware concurrency
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

// "weights=0.5,weights_bytes=1e5,..." -> targets (mixed_precision_flags.h).
absl::Status ParseMp(const std::string& spec, v1::MixedPrecisionConfig* mp) {
  return ParseMixedPrecisionTargets(spec, mp);
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

absl::Status WriteOutputs(const std::string& dir,
                          const v1::QuantizeResult& result) {
  const auto write = [&](const std::string& name,
                         const std::string& bytes) -> absl::Status {
    absl::Status st = WriteFileAtomically(dir + "/" + name, bytes);
    if (!st.ok()) {
      return absl::Status(st.code(), absl::StrCat("writing ", dir, "/", name,
                                                  ": ", st.message()));
    }
    return absl::OkStatus();
  };
  if (!result.qdq_onnx().empty()) {
    RETURN_IF_ERROR(write("model.qdq.onnx", result.qdq_onnx()));
  }
  RETURN_IF_ERROR(write("quantized_graph.pb",
                        SerializeDeterministic(result.quantized_graph())));
  ASSIGN_OR_RETURN(std::string json,
                   ToDeterministicJson(result.quantized_graph()));
  RETURN_IF_ERROR(write("quantized_graph.json", json));
  RETURN_IF_ERROR(write("report.json", result.report_json()));
  RETURN_IF_ERROR(write("report.html", result.report_html()));
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
  std::printf(
      "wrote %s/{model.qdq.onnx, quantized_graph.pb, "
      "quantized_graph.json, report.json, report.html}\n",
      dir.c_str());
}

absl::StatusOr<v1::QuantizeResult> Run(const Args& args) {
  ASSIGN_OR_RETURN(std::string model_bytes,
                   ReadFileLimited(args.model, int64_t{2} << 30));
  ASSIGN_OR_RETURN(Model model, ImportOnnx(model_bytes));
  std::vector<std::string> inputs;
  for (const auto& in : model.graph.inputs) inputs.push_back(in.name);

  v1::QuantizeRequest request;
  request.set_onnx_model(std::move(model_bytes));
  RETURN_IF_ERROR(
      AddSamples(args.calib, inputs, request.mutable_calibration_samples()));
  if (!args.eval.empty()) {
    RETURN_IF_ERROR(
        AddSamples(args.eval, inputs, request.mutable_evaluation_samples()));
  }
  if (IsTpcFile(args.tpc)) {
    ASSIGN_OR_RETURN(*request.mutable_tpc()->mutable_inline_tpc(),
                     tpc::LoadTpcFile(args.tpc));
  } else {
    request.mutable_tpc()->set_name(args.tpc);
  }
  if (!args.mp.empty()) {
    RETURN_IF_ERROR(ParseMp(args.mp, request.mutable_mixed_precision()));
  }
  if (!args.bits_override.empty()) {
    RETURN_IF_ERROR(ParseBitWidthOverrides(args.bits_override,
                                           request.mutable_mixed_precision()));
  }
  if (args.weights_bits > 0) {
    request.mutable_mixed_precision()->set_kernel_weights_bits(
        args.weights_bits);
  }
  if (args.gptq) request.mutable_gptq()->set_enabled(true);
  request.set_num_threads(args.threads);

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
  absl::Status st = WriteOutputs(args.out, *result);
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
