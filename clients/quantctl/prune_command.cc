// quantctl prune MODEL.onnx --weights-memory F --tpc NAME|FILE --calib DIR
//     --out DIR [--eval DIR] [--importance lfh|magnitude] [--score-samples N]
//     [--quantize [job options]] [--server HOST:PORT [TLS/token flags]]
//     [--deadline D] [--force] [--quiet]
//
// Structured pruning in-process (core/pruning/prune_job.h, docs/pruning.md)
// or on a server (quantd.v1.PruningService):
// writes DIR/model.pruned.onnx (a smaller float model) and
// DIR/prune_report.json (per-layer kept/removed channels, weights memory
// before/target/after, the output SQNR vs the unpruned model on --eval);
// with --quantize also quantize's files for the pruned model (the job
// options apply to that step).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "clients/batch/job_files.h"
#include "clients/batch/job_options.h"
#include "clients/cpp/channel.h"
#include "clients/cpp/client.h"
#include "clients/cpp/result_assembler.h"
#include "clients/quantctl/channel_flags.h"
#include "clients/quantctl/command.h"
#include "clients/quantctl/progress_bar.h"
#include "core/io/file_util.h"
#include "core/pruning/prune_job.h"
#include "core/runtime/cpu_count.h"
#include "core/runtime/thread_pool.h"
#include "core/tpc/registry.h"
#include "core/util/status_macros.h"
#include "quantd/v1/pruning_service.grpc.pb.h"

namespace quantd::quantctl {
namespace {

struct Args {
  JobFiles job;  // model, tpc, calib, eval and the quantize options
  std::string out;
  std::string weights_memory;
  std::string importance;
  bool quantize = false;
  int score_samples = 0;
  client::ChannelOptions channel;  // target = --server
  absl::Duration deadline = absl::InfiniteDuration();
  bool force = false;
  bool quiet = false;
};

FlagSet Flags(Args* a) {
  FlagSet f("prune",
            "MODEL.onnx --weights-memory F --tpc NAME[@VERSION]|FILE "
            "--calib DIR --out DIR",
            "Structured pruning (MCT's): removes SIMD-size groups of output "
            "channels, least important first, until the float weights memory "
            "is at or under --weights-memory; writes model.pruned.onnx and "
            "prune_report.json into --out (docs/pruning.md).");
  f.Positional("MODEL.onnx", "the float ONNX model", &a->job.model);
  f.String("weights-memory", "F",
           "target: a fraction of the model's float weights memory (0.5, "
           "50%) or bytes (1200000, 300KB, 1.5MB)",
           &a->weights_memory, {.required = true});
  f.String("tpc", "NAME[@VERSION]|FILE",
           "target platform whose op configs give each layer's simd_size",
           &a->job.tpc, {.required = true});
  f.String("calib", "DIR", "sample set the importance metric runs on",
           &a->job.calib, {.required = true});
  f.String("out", "DIR",
           "output folder; must be empty or absent unless --force", &a->out,
           {.required = true});
  f.String("eval", "DIR",
           "held-out sample set for the SQNR (default: calibration)",
           &a->job.eval);
  f.String("importance", "NAME",
           "channel importance: lfh (MCT's, default) or magnitude",
           &a->importance);
  f.Int("score-samples",
        "LFH: calibration samples the Hessian estimate averages over "
        "(default: MCT's 32)",
        0, 100000, &a->score_samples);
  f.Bool("quantize",
         "also quantize the pruned model (the job options below apply)",
         &a->quantize);
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
  f.Bool("force", "write into a non-empty --out", &a->force);
  f.Bool("quiet", "no progress on stderr", &a->quiet);
  AddServerFlags(&f, "run the job on a quantd server (its Prune RPC)",
                 &a->channel, &a->deadline);
  return f;
}

std::vector<FlagSet> FlagSets() {
  static Args unused;
  return {Flags(&unused)};
}

// "0.5" / "50%" -> a fraction; "1200000" / "300KB" / "1.5MB" -> bytes.
absl::Status ParseWeightsMemory(const std::string& original,
                                v1::PruneRequest* r) {
  absl::string_view text = original;
  double scale = 0;  // 0: a fraction unless > 1
  if (absl::ConsumeSuffix(&text, "%")) {
    double pct;
    if (!absl::SimpleAtod(text, &pct)) {
      return absl::InvalidArgumentError("--weights-memory " + original +
                                        ": not a number");
    }
    r->set_weights_memory_fraction(pct / 100);
    return absl::OkStatus();
  }
  if (absl::ConsumeSuffix(&text, "MB")) {
    scale = 1e6;
  } else if (absl::ConsumeSuffix(&text, "KB")) {
    scale = 1e3;
  } else if (absl::ConsumeSuffix(&text, "B")) {
    scale = 1;
  }
  double v;
  if (!absl::SimpleAtod(text, &v) || !(v > 0) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(
        "--weights-memory " + original +
        ": expected a fraction (0.5, 50%) or bytes (1200000, 300KB, 1.5MB)");
  }
  if (scale == 0 && v <= 1) {
    r->set_weights_memory_fraction(v);
  } else {
    r->set_weights_memory_bytes(
        static_cast<int64_t>(std::floor(v * (scale == 0 ? 1 : scale))));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::PruneRequest> BuildPruneRequest(const Args& args) {
  ASSIGN_OR_RETURN(v1::QuantizeRequest q, BuildQuantizeRequest(args.job));
  v1::PruneRequest r;
  // `generated:` samples are made by the job (in-process or on the server).
  if (q.has_generated_calibration()) {
    r.mutable_generated_calibration()->Swap(q.mutable_generated_calibration());
    q.clear_generated_calibration();
  }
  RETURN_IF_ERROR(ParseWeightsMemory(args.weights_memory, &r));
  r.set_onnx_model(std::move(*q.mutable_onnx_model()));
  *r.mutable_tpc() = q.tpc();
  r.mutable_calibration_samples()->Swap(q.mutable_calibration_samples());
  r.mutable_evaluation_samples()->Swap(q.mutable_evaluation_samples());
  r.set_importance_metric(args.importance);
  r.set_num_score_approximations(args.score_samples);
  r.set_num_threads(q.num_threads());
  if (args.quantize) *r.mutable_quantize() = std::move(q);
  return r;
}

absl::Status WriteOutputs(const std::string& out,
                          const v1::PruneResult& result) {
  namespace fs = std::filesystem;
  RETURN_IF_ERROR(WriteFileAtomically((fs::path(out) / "model.pruned.onnx"),
                                      result.pruned_onnx()));
  RETURN_IF_ERROR(WriteFileAtomically((fs::path(out) / "prune_report.json"),
                                      result.report_json() + "\n"));
  if (result.has_quantized()) {
    RETURN_IF_ERROR(WriteResultFiles(out, result.quantized()));
  }
  return absl::OkStatus();
}

void PrintSummary(const v1::PruneResult& r, const std::string& out) {
  int pruned_layers = 0;
  for (const v1::LayerPruning& l : r.layers()) {
    pruned_layers += l.kept() < l.channels();
  }
  std::printf(
      "pruned %d of %d prunable layers (%s, %s): weights %lld -> %lld bytes "
      "(target %lld), output SQNR %.2f dB\n",
      pruned_layers, r.layers_size(), r.importance_metric().c_str(),
      r.tpc().c_str(), static_cast<long long>(r.weights_memory_before()),
      static_cast<long long>(r.weights_memory_after()),
      static_cast<long long>(r.weights_memory_target()), r.output_sqnr_db());
  if (r.has_quantized()) {
    std::printf("quantized the pruned model: output SQNR %.2f dB\n",
                r.quantized().output_sqnr_db());
  }
  std::printf("wrote %s/{model.pruned.onnx, prune_report.json%s}\n",
              out.c_str(), r.has_quantized() ? ", quantize's files" : "");
}

absl::StatusOr<v1::PruneResult> RunInProcess(const Args& args,
                                             const v1::PruneRequest& request,
                                             const TpcRegistry* registry,
                                             ProgressBar* bar) {
  const int threads = args.job.threads > 0 ? args.job.threads : AvailableCpus();
  ThreadPool pool(threads - 1);
  CancellationToken cancel(args.deadline == absl::InfiniteDuration()
                               ? absl::InfiniteFuture()
                               : absl::Now() + args.deadline);
  PruneContext context;
  context.registry = registry;
  context.pool = &pool;
  context.cancel = &cancel;
  context.progress = bar;
  return RunPruneJob(request, context);
}

// The Prune RPC: progress events to `bar`, the last event's result.
absl::StatusOr<v1::PruneResult> RunRemote(const Args& args,
                                          const v1::PruneRequest& request,
                                          ProgressBar* bar) {
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                   client::CreateChannel(args.channel));
  auto stub = v1::PruningService::NewStub(channel);
  grpc::ClientContext ctx;
  client::PrepareCallContext(args.channel.auth_token,
                             absl::Now() + args.deadline, &ctx);
  auto reader = stub->Prune(&ctx, request);
  v1::PruneEvent e;
  v1::PruneResult result;
  bool have_result = false;
  // A result larger than the server's max message size comes in chunks.
  client::ResultAssembler chunks;
  absl::Status chunk_status;
  while (reader->Read(&e)) {
    if (e.has_progress()) {
      bar->Report({e.progress().stage(), e.progress().fraction(),
                   e.progress().message()});
    } else if (e.has_warning()) {
      bar->Warn(e.warning().message());
    } else if (e.has_result()) {
      result = std::move(*e.mutable_result());
      have_result = true;
    } else if (e.has_result_chunk() && chunk_status.ok()) {
      chunk_status = chunks.Add(e.result_chunk());
    }
  }
  RETURN_IF_ERROR(client::FromGrpcStatus(reader->Finish()));
  RETURN_IF_ERROR(chunk_status);
  if (!have_result && chunks.started()) {
    RETURN_IF_ERROR(chunks.FinishInto(&result));
    have_result = true;
  }
  if (!have_result) return absl::UnavailableError("Prune: no result sent");
  return result;
}

int RunPrune(const std::vector<std::string>& argv) {
  Args args;
  const FlagSet flags = Flags(&args);
  if (int rc = flags.ParseOrExit(argv); rc >= 0) return rc;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(args.out, ec) &&
      (!fs::is_directory(args.out, ec) ||
       (!args.force && !fs::is_empty(args.out, ec)))) {
    std::fprintf(stderr,
                 "quantctl prune: --out %s: not an empty folder (--force "
                 "overwrites its files)\n",
                 args.out.c_str());
    return 2;
  }
  absl::StatusOr<v1::PruneRequest> request = BuildPruneRequest(args);
  if (request.ok() && args.channel.target.empty() &&
      AnyChannelFlag(args.channel)) {
    request = absl::InvalidArgumentError(
        "TLS and token flags need --server (the job runs in-process without "
        "it)");
  }
  if (!request.ok()) {
    std::fprintf(stderr, "quantctl prune: %s\n",
                 std::string(request.status().message()).c_str());
    return 2;
  }
  ProgressBar bar(stderr, isatty(2) != 0, args.quiet);
  absl::StatusOr<v1::PruneResult> result;
  TpcRegistry registry;
  if (!args.channel.target.empty()) {
    result = RunRemote(args, *request, &bar);
  } else if (absl::Status st = registry.AddBuiltins(); !st.ok()) {
    result = st;
  } else {
    result = RunInProcess(args, *request, &registry, &bar);
  }
  bar.Finish();
  if (!result.ok()) return PrintJobFailure("prune", result.status());
  if (absl::Status st = WriteOutputs(args.out, *result); !st.ok()) {
    std::fprintf(stderr, "quantctl prune: %s\n",
                 std::string(st.message()).c_str());
    return 1;
  }
  PrintSummary(*result, args.out);
  return 0;
}

}  // namespace

QUANTCTL_COMMAND(prune, "structured pruning to a weights memory target (MCT's)",
                 RunPrune, FlagSets);

}  // namespace quantd::quantctl
