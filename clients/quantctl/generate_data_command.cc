// quantctl generate-data MODEL.onnx --count N --out DIR [--shape C,H,W]
//     [--server HOST:PORT [TLS/token flags]] [--deadline D]
//
// Data-free calibration: optimises N random images so that the model's
// BatchNormalization inputs have the layers' running statistics (MCT's data
// generation, docs/data_generation.md), in-process with quantd's executor
// or on a server (quantd.v1.DataGenerationService), and writes them as a
// sample set (DIR/<sample>/<input>.npy) that `quantctl quantize --calib DIR`
// reads. Both run RunGenerateDataJob on the same request: same images.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "clients/cpp/channel.h"
#include "clients/cpp/client.h"
#include "clients/quantctl/channel_flags.h"
#include "clients/quantctl/command.h"
#include "clients/quantctl/progress_bar.h"
#include "core/datagen/generate_job.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/pipeline/job/samples.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/cpu_count.h"
#include "core/runtime/thread_pool.h"
#include "core/util/status_macros.h"
#include "quantd/v1/data_generation_service.grpc.pb.h"

namespace quantd::quantctl {
namespace {

struct GenerateArgs {
  std::string model, out, shape, input_min, input_max, lr, stats;
  int count = 32, iterations = 500, batch_size = 32, extra_pixels = 32;
  int seed = 0, threads = 0;
  bool quiet = false;
  client::ChannelOptions channel;  // target = --server
  absl::Duration deadline = absl::InfiniteDuration();
};

FlagSet Flags(GenerateArgs* a) {
  FlagSet f("generate-data", "MODEL.onnx --count N --out DIR [--shape C,H,W]",
            "Generates N calibration images without data by matching the "
            "model's BatchNormalization statistics (MCT's data generation), "
            "written as a sample set.");
  f.Positional("MODEL.onnx", "the float ONNX model", &a->model);
  f.Int("count", "images to generate", 1, 1000000, &a->count,
        {.required = true});
  f.String("out", "DIR", "sample-set folder to write", &a->out,
           {.required = true});
  f.String("shape", "C,H,W", "image shape (for inputs with dynamic dims)",
           &a->shape);
  f.Int("iterations", "optimisation steps", 1, 1000000, &a->iterations,
        {.default_text = "500"});
  f.Int("batch-size", "images per batch (statistics are per batch)", 1, 4096,
        &a->batch_size, {.default_text = "32"});
  f.String("lr", "X", "Adam's initial learning rate", &a->lr,
           {.default_text = "1"});
  f.Int("extra-pixels", "border of the optimised images (random crops)", 0,
        4096, &a->extra_pixels, {.default_text = "32"});
  f.String("input-min", "V[,V..]", "lowest valid input value (per channel)",
           &a->input_min, {.default_text = "torchvision-normalised 0"});
  f.String("input-max", "V[,V..]", "highest valid input value (per channel)",
           &a->input_max, {.default_text = "torchvision-normalised 1"});
  f.String("stats", "FILE",
           "JSON {tensor: {mean: [..], std: [..]}}: expected statistics for "
           "models whose BatchNormalization was folded",
           &a->stats);
  f.Int("seed", "random seed", 0, 1 << 30, &a->seed, {.default_text = "0"});
  f.Int("threads", "threads in all (0: every core)", 0, 1024, &a->threads,
        {.default_text = "0"});
  f.Bool("quiet", "no progress", &a->quiet);
  AddServerFlags(&f, "generate on a quantd server (its GenerateData RPC)",
                 &a->channel, &a->deadline);
  return f;
}

std::vector<FlagSet> FlagSets() {
  static GenerateArgs unused;
  return {Flags(&unused)};
}

absl::StatusOr<std::vector<float>> Floats(const std::string& flag,
                                          const std::string& text) {
  std::vector<float> v;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    float x;
    if (!absl::SimpleAtof(part, &x) || !std::isfinite(x)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, ": '", part, "' is not a number"));
    }
    v.push_back(x);
  }
  return v;
}

// The flags as the RPC's request (the model's bytes inline, the statistics
// file's text); in-process generation runs the same request.
absl::StatusOr<v1::GenerateDataRequest> ToRequest(const GenerateArgs& a) {
  v1::GenerateDataRequest r;
  r.set_count(a.count);
  r.set_iterations(a.iterations);
  r.set_batch_size(a.batch_size);
  r.set_extra_pixels(a.extra_pixels);
  r.set_seed(static_cast<uint64_t>(a.seed));
  double lr = 1.0;
  if (!a.lr.empty() && !absl::SimpleAtod(a.lr, &lr)) {
    return absl::InvalidArgumentError("--lr: not a number");
  }
  if (!(lr > 0 && lr <= datagen::kMaxLearningRate)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--lr: ", a.lr, " is not in (0, ", datagen::kMaxLearningRate, "]"));
  }
  r.set_learning_rate(lr);
  if (!a.shape.empty()) {
    for (absl::string_view part : absl::StrSplit(a.shape, ',')) {
      int64_t d;
      if (!absl::SimpleAtoi(part, &d)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--shape: '", part, "' is not an integer"));
      }
      r.add_shape(d);
    }
  }
  if (a.input_min.empty() != a.input_max.empty()) {
    return absl::InvalidArgumentError(
        "--input-min and --input-max go together");
  }
  if (!a.input_min.empty()) {
    ASSIGN_OR_RETURN(std::vector<float> lo, Floats("input-min", a.input_min));
    ASSIGN_OR_RETURN(std::vector<float> hi, Floats("input-max", a.input_max));
    r.mutable_input_min()->Add(lo.begin(), lo.end());
    r.mutable_input_max()->Add(hi.begin(), hi.end());
  }
  if (!a.stats.empty()) {
    ASSIGN_OR_RETURN(*r.mutable_statistics_json(),
                     ReadFileLimited(a.stats, int64_t{64} << 20));
  }
  ASSIGN_OR_RETURN(*r.mutable_onnx_model(),
                   ReadFileLimited(a.model, (int64_t{2} << 30) - 1));
  return r;
}

absl::StatusOr<datagen::GeneratedData> RunInProcess(
    const GenerateArgs& args, const v1::GenerateDataRequest& request,
    int threads, ProgressBar* bar) {
  ThreadPool pool(std::max(threads, 1) - 1);
  CancellationToken cancel(args.deadline == absl::InfiniteDuration()
                               ? absl::InfiniteFuture()
                               : absl::Now() + args.deadline);
  datagen::GenerateJobContext ctx;
  ctx.run.pool = &pool;
  ctx.run.cancel = &cancel;
  ctx.run.progress = bar;
  return datagen::RunGenerateDataJob(request, ctx);
}

// Appends one result event's images; checks they arrive in order.
absl::Status AddResult(const v1::GenerateDataResult& r,
                       datagen::GeneratedData* data) {
  if (r.first_index() != static_cast<int64_t>(data->samples.size())) {
    return absl::DataLossError(absl::StrCat("GenerateData: images from ",
                                            r.first_index(), " arrived after ",
                                            data->samples.size()));
  }
  data->input_name = r.input_name();
  data->aligned_tensors = r.aligned_tensors();
  data->first_loss = r.first_loss();
  data->final_loss = r.final_loss();
  data->warnings.assign(r.warnings().begin(), r.warnings().end());
  for (const v1::Tensor& t : r.samples()) {
    ASSIGN_OR_RETURN(
        Tensor x, TensorFromSampleProto(t, "GenerateData result", INT64_MAX));
    data->samples.push_back(std::move(x));
  }
  return absl::OkStatus();
}

// The GenerateData RPC: progress events to `bar`, the images from the
// result events.
absl::StatusOr<datagen::GeneratedData> RunRemote(
    const GenerateArgs& args, const v1::GenerateDataRequest& request,
    ProgressBar* bar) {
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                   client::CreateChannel(args.channel));
  auto stub = v1::DataGenerationService::NewStub(channel);
  grpc::ClientContext ctx;
  client::PrepareCallContext(args.channel.auth_token,
                             absl::Now() + args.deadline, &ctx);
  auto reader = stub->GenerateData(&ctx, request);
  v1::GenerateDataEvent e;
  datagen::GeneratedData data;
  absl::Status added;
  while (reader->Read(&e)) {
    if (e.has_progress()) {
      bar->Report({e.progress().stage(), e.progress().fraction(),
                   e.progress().message()});
    } else if (e.has_warning()) {
      bar->Warn(e.warning().message());
    } else if (e.has_result() && added.ok()) {
      added = AddResult(e.result(), &data);
    }
  }
  RETURN_IF_ERROR(client::FromGrpcStatus(reader->Finish()));
  RETURN_IF_ERROR(added);
  if (data.samples.size() != static_cast<size_t>(request.count())) {
    return absl::DataLossError(
        absl::StrCat("GenerateData: ", data.samples.size(), " of ",
                     request.count(), " images arrived"));
  }
  return data;
}

absl::Status Generate(const GenerateArgs& args, ProgressBar* bar) {
  ASSIGN_OR_RETURN(v1::GenerateDataRequest request, ToRequest(args));
  const int threads = args.threads > 0 ? args.threads : AvailableCpus();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<datagen::GeneratedData> generated =
      args.channel.target.empty() ? RunInProcess(args, request, threads, bar)
                                  : RunRemote(args, request, bar);
  RETURN_IF_ERROR(generated.status());
  const datagen::GeneratedData& data = *generated;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  SampleSet set;
  for (size_t i = 0; i < data.samples.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "g%05zu", i);
    set.names.push_back(name);
    set.samples.push_back({{data.input_name, data.samples[i]}});
  }
  RETURN_IF_ERROR(WriteSampleSet(args.out, set));
  bar->Finish();
  for (const std::string& w : data.warnings) {
    std::fprintf(stderr, "quantctl: warning: %s\n", w.c_str());
  }
  const std::string where = args.channel.target.empty()
                                ? absl::StrCat(threads, " thread(s)")
                                : absl::StrCat("on ", args.channel.target);
  std::printf(
      "%zu images in %s: %lld tensors aligned, loss %.4g -> %.4g, %.1f s "
      "(%.2f s per image, %s)\n",
      set.size(), args.out.c_str(),
      static_cast<long long>(data.aligned_tensors), data.first_loss,
      data.final_loss, seconds, seconds / set.size(), where.c_str());
  return absl::OkStatus();
}

int RunGenerateData(const std::vector<std::string>& argv) {
  GenerateArgs args;
  if (int rc = Flags(&args).ParseOrExit(argv); rc >= 0) return rc;
  if (args.channel.target.empty() && AnyChannelFlag(args.channel)) {
    std::fprintf(stderr,
                 "quantctl generate-data: TLS and token flags need --server "
                 "(generation runs in-process without it)\n");
    return 2;
  }
  ProgressBar bar(stderr, isatty(fileno(stderr)) != 0, args.quiet);
  absl::Status status = Generate(args, &bar);
  if (!status.ok()) {
    bar.Finish();
    return PrintJobFailure("generate-data", status);
  }
  return 0;
}

}  // namespace

// The verb has a dash, which QUANTCTL_COMMAND's token cannot spell.
static const bool quantctl_registered_generate_data = RegisterCommand(
    {"generate-data",
     "data-free calibration images (BatchNormalization statistics)",
     RunGenerateData, FlagSets});

}  // namespace quantd::quantctl
