// quantctl's flag table (clients/quantctl/flags.h) and the job options it
// shares with batch manifests (clients/batch/job_options.h).
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/batch/job_options.h"
#include "clients/batch/manifest.h"
#include "clients/batch/mixed_precision_flags.h"
#include "clients/quantctl/flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::quantctl {
namespace {

using ::testing::HasSubstr;

struct Values {
  std::string out, model;
  int threads = 0;
  bool force = false;
  absl::Duration deadline = absl::InfiniteDuration();
};

FlagSet TestFlags(Values* v) {
  FlagSet f("test", "MODEL --out DIR", "A verb for tests.");
  f.Positional("MODEL", "the model", &v->model);
  f.String("out", "DIR", "output folder", &v->out,
           {.required = true, .aliases = {"out_dir"}});
  f.Int("threads", "threads in all", 1, 8, &v->threads);
  f.Bool("force", "overwrite", &v->force);
  f.Duration("deadline", "give up after", &v->deadline);
  return f;
}

absl::Status Parse(const std::vector<std::string>& args, Values* v) {
  bool help = false;
  return TestFlags(v).Parse(args, &help);
}

TEST(FlagSetTest, SpaceAndEqualsFormsGiveTheSameValues) {
  Values spaced, joined;
  ASSERT_TRUE(Parse({"m.onnx", "--out", "o", "--threads", "3"}, &spaced).ok());
  ASSERT_TRUE(Parse({"--out=o", "m.onnx", "--threads=3"}, &joined).ok());
  for (const Values* v : {&spaced, &joined}) {
    EXPECT_EQ(v->model, "m.onnx");
    EXPECT_EQ(v->out, "o");
    EXPECT_EQ(v->threads, 3);
  }
}

TEST(FlagSetTest, HiddenAliasIsAccepted) {
  Values v;
  ASSERT_TRUE(Parse({"m", "--out_dir", "o"}, &v).ok());
  EXPECT_EQ(v.out, "o");
}

TEST(FlagSetTest, SwitchTakesNoValueOrAnExplicitOne) {
  Values on, off;
  ASSERT_TRUE(Parse({"m", "--out", "o", "--force"}, &on).ok());
  EXPECT_TRUE(on.force);
  off.force = true;
  ASSERT_TRUE(Parse({"m", "--out", "o", "--force=false"}, &off).ok());
  EXPECT_FALSE(off.force);
}

TEST(FlagSetTest, DurationTakesUnitsOrSeconds) {
  Values v;
  ASSERT_TRUE(Parse({"m", "--out", "o", "--deadline", "1h30m"}, &v).ok());
  EXPECT_EQ(v.deadline, absl::Minutes(90));
  ASSERT_TRUE(Parse({"m", "--out", "o", "--deadline=45"}, &v).ok());
  EXPECT_EQ(v.deadline, absl::Seconds(45));
}

TEST(FlagSetTest, ErrorsNameTheFlag) {
  const struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"m", "--out", "o", "--tpcx", "v"}, "unknown flag '--tpcx'"},
      {{"m", "--out", "o", "--tpcx=v"}, "unknown flag '--tpcx'"},
      {{"m", "--out", "o", "-x"}, "unknown flag '-x'"},
      {{"m", "--out"}, "--out needs a value (DIR)"},
      {{"m"}, "--out is required"},
      {{"--out", "o"}, "MODEL is required"},
      {{"m", "n", "--out", "o"}, "unexpected argument 'n'"},
      {{"m", "--out", "o", "--threads", "9"},
       "--threads: '9' is not an integer in [1, 8]"},
      {{"m", "--out", "o", "--force=maybe"}, "--force: 'maybe' is not true"},
      {{"m", "--out", "o", "--deadline", "soon"},
       "--deadline: 'soon' is not a duration"},
  };
  for (const auto& c : cases) {
    Values v;
    absl::Status st = Parse(c.args, &v);
    ASSERT_FALSE(st.ok()) << c.message;
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.message));
  }
}

TEST(FlagSetTest, HelpWinsOverErrorsAndListsEveryFlagOnOneLine) {
  Values v;
  const FlagSet flags = TestFlags(&v);
  bool help = false;
  ASSERT_TRUE(flags.Parse({"--bogus", "-h"}, &help).ok());
  EXPECT_TRUE(help);
  const std::string text = flags.Help();
  EXPECT_THAT(text, HasSubstr("usage: quantctl test MODEL --out DIR"));
  for (const Flag& f : flags.flags()) {
    int lines = 0;
    for (size_t at = text.find("--" + f.name + " "); at != std::string::npos;
         at = text.find("--" + f.name + " ", at + 1)) {
      const size_t bol = text.rfind('\n', at) + 1;
      if (text.compare(bol, 4, "  --") == 0) ++lines;
    }
    EXPECT_EQ(lines, 1) << f.name;
    EXPECT_THAT(text, HasSubstr(f.help)) << f.name;
  }
  EXPECT_THAT(text, ::testing::Not(HasSubstr("out_dir")));  // hidden alias
  EXPECT_THAT(text, HasSubstr("-h, --help"));
}

TEST(JobOptionsTest, FlagAndManifestSpellingsFindTheSameOption) {
  for (const JobOption& o : JobOptions()) {
    EXPECT_EQ(FindJobOption(o.name), &o);
    EXPECT_EQ(FindJobOption(JobOptionKey(o)), &o);
    EXPECT_FALSE(o.help.empty()) << o.name;
  }
  EXPECT_EQ(FindJobOption("bits"), nullptr);
}

TEST(JobOptionsTest, ManifestTakesEveryJobOption) {
  // The options quantize has only as flags before: now in manifests too.
  auto jobs = batch::ParseManifest(
      "{\"model\":\"x.onnx\",\"calib\":\"c\",\"tpc\":\"t\",\"options\":"
      "{\"bits_override\":\"type:Conv=4\",\"keep-float\":\"name:head\","
      "\"config\":\"z_threshold: 8\",\"report_samples\":\"all\"}}\n",
      "m", "/base", batch::ManifestFormat::kJsonLines);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const JobFiles& job = (*jobs)[0].files;
  EXPECT_EQ(job.bits_override, "type:Conv=4");
  EXPECT_EQ(job.keep_float, "name:head");
  EXPECT_EQ(job.config, "z_threshold: 8");
  EXPECT_EQ(job.report_samples, -1);
}

TEST(JobOptionsTest, ReportSamplesTakesTheRequestsMinusOneForAll) {
  // The Python API passes report_samples=-1 (QuantizeRequest's "all").
  JobFiles job;
  ASSERT_TRUE(ApplyJobOption("report_samples", "-1", &job).ok());
  EXPECT_EQ(job.report_samples, -1);
  EXPECT_FALSE(ApplyJobOption("report_samples", "-2", &job).ok());
}

TEST(JobOptionsTest, SettingsWithoutFilesFillTheRequest) {
  JobFiles job;
  job.tpc = "imx500@4.1";
  ASSERT_TRUE(ApplyJobOption("weights_bits", "4", &job).ok());
  ASSERT_TRUE(ApplyJobOption("keep_float", "name:head", &job).ok());
  v1::QuantizeRequest request;
  ASSERT_TRUE(ApplyJobSettings(job, &request).ok());
  EXPECT_EQ(request.tpc().name(), "imx500@4.1");
  EXPECT_EQ(request.mixed_precision().kernel_weights_bits(), 4);
  ASSERT_EQ(request.quantization().keep_float_size(), 1);
  EXPECT_EQ(request.quantization().keep_float(0).node_name(), "head");
  EXPECT_TRUE(request.onnx_model().empty());
}

TEST(JobOptionsTest, GptqConfigEnablesGptqWithItsFields) {
  JobFiles job;
  ASSERT_TRUE(
      ApplyJobOption("gptq-config", "n_epochs: 20 rows_per_block: 8192", &job)
          .ok());
  v1::QuantizeRequest request;
  ASSERT_TRUE(ApplyJobSettings(job, &request).ok());
  EXPECT_TRUE(request.gptq().enabled());
  EXPECT_EQ(request.gptq().n_epochs(), 20);
  EXPECT_EQ(request.gptq().rows_per_block(), 8192);
  absl::Status bad = ApplyJobOption("gptq_config", "epochs: 20", &job);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.message()), HasSubstr("not GptqConfig text"));
}

// --analyze-method picks the method and turns the analysis on.
TEST(JobOptionsTest, AnalyzeMethodImpliesTheAnalysis) {
  for (const auto& [text, method] :
       std::vector<std::pair<std::string, v1::SensitivityAnalysisMethod>>{
           {"exact", v1::SENSITIVITY_ANALYSIS_METHOD_EXACT},
           {"estimate", v1::SENSITIVITY_ANALYSIS_METHOD_ESTIMATE},
           {"auto", v1::SENSITIVITY_ANALYSIS_METHOD_UNSPECIFIED}}) {
    JobFiles job;
    ASSERT_TRUE(ApplyJobOption("analyze_method", text, &job).ok()) << text;
    v1::QuantizeRequest request;
    ASSERT_TRUE(ApplyJobSettings(job, &request).ok());
    EXPECT_TRUE(request.sensitivity_analysis());
    EXPECT_EQ(request.sensitivity_analysis_method(), method);
  }
  JobFiles job;
  absl::Status bad = ApplyJobOption("analyze-method", "fast", &job);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.message()),
              HasSubstr("'fast' is not estimate, exact or auto"));
}

// --mp-config merges into the fields --mp set, not over them.
TEST(JobOptionsTest, MpConfigMergesWithTheMpTargets) {
  JobFiles job;
  ASSERT_TRUE(ApplyJobOption("mp", "weights=0.75", &job).ok());
  ASSERT_TRUE(ApplyJobOption("mp-config",
                             "num_of_images: 8 refine_mp_solution: false", &job)
                  .ok());
  v1::QuantizeRequest request;
  ASSERT_TRUE(ApplyJobSettings(job, &request).ok());
  EXPECT_EQ(request.mixed_precision().num_of_images(), 8);
  EXPECT_FALSE(request.mixed_precision().refine_mp_solution());
  EXPECT_DOUBLE_EQ(
      request.mixed_precision().target_fraction().weights_memory_bytes(), 0.75);
  absl::Status bad = ApplyJobOption("mp_config", "images: 8", &job);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.message()),
              HasSubstr("not MixedPrecisionConfig text"));
}

TEST(JobOptionsTest, BadValuesFailTheSameWayInFlagsAndManifests) {
  JobFiles job;
  absl::Status flag = ApplyJobOption("keep-float", "layer3", &job);
  ASSERT_FALSE(flag.ok());
  EXPECT_THAT(std::string(flag.message()),
              HasSubstr("'layer3' is not type:OP, name:NODE or scope:"));
  auto manifest = batch::ParseManifest(
      "{\"model\":\"x\",\"calib\":\"c\",\"tpc\":\"t\",\"options\":"
      "{\"keep_float\":\"layer3\"}}\n",
      "m", "/base", batch::ManifestFormat::kJsonLines);
  ASSERT_FALSE(manifest.ok());
  EXPECT_THAT(std::string(manifest.status().message()),
              HasSubstr(absl::StrCat("m:1: field 'options.keep_float': ",
                                     flag.message())));
}

TEST(JobOptionsTest, KeepFloatBecomesRequestFilters) {
  v1::QuantizationConfig config;
  ASSERT_TRUE(
      ParseKeepFloat("type:Softmax,name:conv_3,scope:head/", &config).ok());
  ASSERT_EQ(config.keep_float_size(), 3);
  EXPECT_EQ(config.keep_float(0).node_type(), "Softmax");
  EXPECT_EQ(config.keep_float(1).node_name(), "conv_3");
  EXPECT_EQ(config.keep_float(2).name_scope(), "head/");
}

}  // namespace
}  // namespace quantd::quantctl
