// quantctl generate-data MODEL.onnx --count N --out DIR [--shape C,H,W]
//
// Data-free calibration: optimises N random images so that the model's
// BatchNormalization inputs have the layers' running statistics (MCT's data
// generation, docs/data_generation.md), in-process with quantd's executor,
// and writes them as a sample set (DIR/<sample>/<input>.npy) that
// `quantctl quantize --calib DIR` reads.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "clients/quantctl/command.h"
#include "clients/quantctl/progress_bar.h"
#include "core/datagen/data_generation.h"
#include "core/datagen/statistics_json.h"
#include "core/graph/onnx_import.h"
#include "core/io/file_util.h"
#include "core/io/sample_set.h"
#include "core/runtime/thread_pool.h"
#include "core/util/status_macros.h"

namespace quantd::quantctl {
namespace {

struct GenerateArgs {
  std::string model, out, shape, input_min, input_max, lr, stats;
  int count = 32, iterations = 500, batch_size = 32, extra_pixels = 32;
  int seed = 0, threads = 0;
  bool quiet = false;
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
    if (!absl::SimpleAtof(part, &x)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, ": '", part, "' is not a number"));
    }
    v.push_back(x);
  }
  return v;
}

absl::StatusOr<datagen::DataGenOptions> ToOptions(const GenerateArgs& a) {
  datagen::DataGenOptions o;
  o.count = a.count;
  o.iterations = a.iterations;
  o.batch_size = a.batch_size;
  o.extra_pixels = a.extra_pixels;
  o.seed = static_cast<uint64_t>(a.seed);
  if (!a.lr.empty() && !absl::SimpleAtod(a.lr, &o.learning_rate)) {
    return absl::InvalidArgumentError("--lr: not a number");
  }
  if (!a.shape.empty()) {
    for (absl::string_view part : absl::StrSplit(a.shape, ',')) {
      int64_t d;
      if (!absl::SimpleAtoi(part, &d)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--shape: '", part, "' is not an integer"));
      }
      o.shape.push_back(d);
    }
  }
  if (a.input_min.empty() != a.input_max.empty()) {
    return absl::InvalidArgumentError(
        "--input-min and --input-max go together");
  }
  if (!a.input_min.empty()) {
    ASSIGN_OR_RETURN(o.input_min, Floats("input-min", a.input_min));
    ASSIGN_OR_RETURN(o.input_max, Floats("input-max", a.input_max));
  }
  if (!a.stats.empty()) {
    ASSIGN_OR_RETURN(std::string text,
                     ReadFileLimited(a.stats, int64_t{64} << 20));
    ASSIGN_OR_RETURN(o.statistics, datagen::ParseStatisticsJson(text));
  }
  return o;
}

absl::Status Generate(const GenerateArgs& args, ProgressBar* bar) {
  ASSIGN_OR_RETURN(datagen::DataGenOptions options, ToOptions(args));
  ASSIGN_OR_RETURN(Model model, ImportOnnxFile(args.model));
  const int threads =
      args.threads > 0 ? args.threads
                       : static_cast<int>(std::thread::hardware_concurrency());
  ThreadPool pool(std::max(threads, 1) - 1);
  datagen::DataGenContext ctx;
  ctx.pool = &pool;
  ctx.progress = bar;
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(
      datagen::GeneratedData data,
      datagen::GenerateData(std::make_shared<const Model>(std::move(model)),
                            options, ctx));
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
  std::printf(
      "%zu images in %s: %lld tensors aligned, loss %.4g -> %.4g, %.1f s "
      "(%.2f s per image, %d thread(s))\n",
      set.size(), args.out.c_str(),
      static_cast<long long>(data.aligned_tensors), data.first_loss,
      data.final_loss, seconds, seconds / set.size(), threads);
  return absl::OkStatus();
}

int RunGenerateData(const std::vector<std::string>& argv) {
  GenerateArgs args;
  if (int rc = Flags(&args).ParseOrExit(argv); rc >= 0) return rc;
  ProgressBar bar(stderr, isatty(fileno(stderr)) != 0, args.quiet);
  absl::Status status = Generate(args, &bar);
  if (!status.ok()) {
    bar.Finish();
    std::fprintf(stderr, "quantctl generate-data: %s\n",
                 status.ToString().c_str());
    return 1;
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
