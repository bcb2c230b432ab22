// Unit tests of the batch runner's parts: manifest parsing, retry policy,
// replica picking, the output folder and the digests.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "clients/batch/digests.h"
#include "clients/batch/manifest.h"
#include "clients/batch/output_dir.h"
#include "clients/batch/replica_picker.h"
#include "clients/batch/retry_policy.h"
#include "core/io/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd::batch {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<std::vector<BatchJob>> Parse(const std::string& text,
                                            ManifestFormat format) {
  return ParseManifest(text, "m", "/base", format);
}

TEST(ManifestTest, JsonLinesResolvesPathsAgainstTheManifestFolder) {
  auto jobs = Parse(
      "# comment\n"
      "{\"id\":\"a\",\"model\":\"m/x.onnx\",\"calib\":\"c\",\"heldout\":"
      "\"/abs/e\",\"tpc\":\"imx500@4.0\",\"options\":{\"weights_bits\":4,"
      "\"activation_storage\":\"int8\",\"weight_storage\":\"uint8\","
      "\"mp\":\"weights=0.5\",\"gptq\":true,"
      "\"threads\":2}}\n\n",
      ManifestFormat::kJsonLines);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  const BatchJob& job = (*jobs)[0];
  EXPECT_EQ(job.id, "a");
  EXPECT_EQ(job.line, 2);
  EXPECT_EQ(job.files.model, "/base/m/x.onnx");
  EXPECT_EQ(job.files.calib, "/base/c");
  EXPECT_EQ(job.files.eval, "/abs/e");
  EXPECT_EQ(job.files.tpc, "imx500@4.0");  // a name, not a path
  EXPECT_EQ(job.files.weights_bits, 4);
  EXPECT_EQ(job.files.activation_storage, v1::ACTIVATION_STORAGE_INT8);
  EXPECT_EQ(job.files.weight_storage, v1::WEIGHT_STORAGE_UINT8);
  EXPECT_EQ(job.files.mp, "weights=0.5");
  EXPECT_TRUE(job.files.gptq);
  EXPECT_EQ(job.files.threads, 2);
}

TEST(ManifestTest, TpcFileIsResolvedLikeOtherPaths) {
  auto jobs =
      Parse("{\"model\":\"x.onnx\",\"calib\":\"c\",\"tpc\":\"tpcs/mine.json\"}",
            ManifestFormat::kJsonLines);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ((*jobs)[0].files.tpc, "/base/tpcs/mine.json");
}

TEST(ManifestTest, DefaultIdIsModelStemAndLine) {
  auto jobs = Parse(
      "{\"model\":\"dir/resnet.onnx\",\"calib\":\"c\",\"tpc\":\"t\"}\n"
      "{\"model\":\"dir/resnet.onnx\",\"calib\":\"d\",\"tpc\":\"t\"}\n",
      ManifestFormat::kJsonLines);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ((*jobs)[0].id, "resnet-1");
  EXPECT_EQ((*jobs)[1].id, "resnet-2");
}

TEST(ManifestTest, CsvWithHeaderAndQuotedMpString) {
  auto jobs = Parse(
      "id,model,calib,tpc,weights_bits,activation_storage,mp\n"
      "a,x.onnx,c,imx500,8,uint8,\"weights=0.5,total=0.8\"\n"
      "b,y.onnx,c,imx500,,,\n",
      ManifestFormat::kCsv);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].files.mp, "weights=0.5,total=0.8");
  EXPECT_EQ((*jobs)[0].files.weights_bits, 8);
  EXPECT_EQ((*jobs)[0].files.activation_storage, v1::ACTIVATION_STORAGE_UINT8);
  EXPECT_EQ((*jobs)[1].files.weights_bits, 0);
  EXPECT_EQ((*jobs)[1].files.model, "/base/y.onnx");
}

TEST(ManifestTest, ExportOptionListsFormats) {
  auto jobs = Parse(
      "{\"model\":\"x.onnx\",\"calib\":\"c\",\"tpc\":\"t\",\"options\":"
      "{\"export\":\"qdq,mctq\"}}\n"
      "{\"model\":\"y.onnx\",\"calib\":\"c\",\"tpc\":\"t\"}\n",
      ManifestFormat::kJsonLines);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ((*jobs)[0].files.export_formats,
            (std::vector<v1::ExportFormat>{v1::EXPORT_FORMAT_QDQ,
                                           v1::EXPORT_FORMAT_MCTQ}));
  EXPECT_TRUE((*jobs)[1].files.export_formats.empty());  // QDQ only
  auto csv =
      Parse("model,calib,tpc,export\nx.onnx,c,t,mctq\n", ManifestFormat::kCsv);
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ((*csv)[0].files.export_formats,
            (std::vector<v1::ExportFormat>{v1::EXPORT_FORMAT_MCTQ}));
}

TEST(ManifestTest, AutoDetectsJsonFromTheFirstLine) {
  auto jobs = Parse("{\"model\":\"x.onnx\",\"calib\":\"c\",\"tpc\":\"t\"}",
                    ManifestFormat::kAuto);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ(jobs->size(), 1u);
}

TEST(ManifestTest, ErrorsNameLineAndField) {
  const struct {
    std::string text;
    std::string message;
  } cases[] = {
      {"{\"model\":\"x\",\"tpc\":\"t\"}", "m:1: field 'calib': missing"},
      {"\n{\"model\":\"x\",\"calib\":\"c\",\"tpc\":\"t\",\"options\":"
       "{\"weights_bits\":20}}",
       "m:2: field 'options.weights_bits': '20' is not an integer in [1, "
       "16]"},
      {"{\"model\":\"x\",\"calib\":\"c\",\"tpc\":\"t\",\"options\":"
       "{\"activation_storage\":\"int4\"}}",
       "m:1: field 'options.activation_storage': 'int4' is not int8, uint8 or "
       "auto"},
      {"{\"model\":\"x\",\"calib\":\"c\",\"tpc\":\"t\",\"options\":"
       "{\"mp\":\"weights=abc\"}}",
       "m:1: field 'options.mp': --mp: 'weights=abc' is not KEY=NUMBER"},
      {"{\"model\":\"x\",\"calib\":\"c\",\"tpc\":\"t\",\"options\":"
       "{\"export\":\"qdq,tflite\"}}",
       "m:1: field 'options.export': 'qdq,tflite' is not a list of qdq and "
       "mctq"},
      {"{\"model\":\"x\",\"calib\":\"c\",\"tpc\":\"t\",\"modle\":1}",
       "m:1: field 'modle': unknown field"},
      {"{\"model\":\"x\",\"calib\":\"c\",\"tpc\":\"t\",\"options\":"
       "{\"bits\":4}}",
       "m:1: field 'options.bits': unknown option"},
      {"{\"id\":\"../evil\",\"model\":\"x\",\"calib\":\"c\",\"tpc\":\"t\"}",
       "m:1: field 'id': '../evil' is not a folder name"},
      // The job's folder would replace the batch's summary.
      {"{\"id\":\"summary.json\",\"model\":\"x\",\"calib\":\"c\","
       "\"tpc\":\"t\"}",
       "m:1: field 'id': 'summary.json' is not a folder name"},
      {"{\"id\":\"Summary.JSON\",\"model\":\"x\",\"calib\":\"c\","
       "\"tpc\":\"t\"}",
       "m:1: field 'id': 'Summary.JSON' is not a folder name"},
      {"{\"id\":\"a\",\"model\":\"x\",\"calib\":\"c\",\"tpc\":\"t\"}\n"
       "{\"id\":\"a\",\"model\":\"y\",\"calib\":\"c\",\"tpc\":\"t\"}",
       "m:2: field 'id': 'a' is already used on line 1"},
      {"{\"model\":", "m:1: not a JSON object"},
      {"{\"model\":5,\"calib\":\"c\",\"tpc\":\"t\"}",
       "m:1: field 'model': expected a string, got 5"},
      {"", "m: no jobs"},
  };
  for (const auto& c : cases) {
    auto jobs = Parse(c.text, ManifestFormat::kJsonLines);
    ASSERT_FALSE(jobs.ok()) << c.text;
    EXPECT_EQ(jobs.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(jobs.status().message()), HasSubstr(c.message))
        << c.text;
  }
}

TEST(ManifestTest, CsvErrorsNameLineAndColumn) {
  auto bad_header = Parse("model,calib,tpc,colour\n", ManifestFormat::kCsv);
  ASSERT_FALSE(bad_header.ok());
  EXPECT_THAT(std::string(bad_header.status().message()),
              HasSubstr("m:1: header column 'colour'"));
  auto short_row = Parse("model,calib,tpc\nx,c\n", ManifestFormat::kCsv);
  ASSERT_FALSE(short_row.ok());
  EXPECT_THAT(std::string(short_row.status().message()),
              HasSubstr("m:2: 2 columns, the header has 3"));
  auto bad_bool =
      Parse("model,calib,tpc,gptq\nx,c,t,maybe\n", ManifestFormat::kCsv);
  ASSERT_FALSE(bad_bool.ok());
  EXPECT_THAT(std::string(bad_bool.status().message()),
              HasSubstr("m:2: field 'options.gptq': 'maybe' is not true"));
}

TEST(RetryPolicyTest, ReplicaFailuresAreRetriedJobErrorsAreNot) {
  using absl::StatusCode;
  const auto retry = [](StatusCode code, const char* message,
                        AttemptPhase phase = AttemptPhase::kCall) {
    return IsRetryable(absl::Status(code, message), phase,
                       /*cancelled_by_runner=*/false);
  };
  EXPECT_TRUE(retry(StatusCode::kUnavailable, "Socket closed"));
  EXPECT_TRUE(retry(StatusCode::kResourceExhausted, "queue full"));
  EXPECT_TRUE(retry(StatusCode::kCancelled, "server shutting down"));
  EXPECT_TRUE(retry(StatusCode::kInternal, "Received RST_STREAM"));
  EXPECT_TRUE(
      retry(StatusCode::kInternal, "Quantize stream ended without a result"));
  EXPECT_TRUE(
      retry(StatusCode::kDeadlineExceeded, "connect", AttemptPhase::kConnect));
  EXPECT_FALSE(retry(StatusCode::kDeadlineExceeded, "job deadline"));
  EXPECT_FALSE(retry(StatusCode::kInvalidArgument, "onnx_model: empty"));
  EXPECT_FALSE(retry(StatusCode::kNotFound, "tpc 'x' unknown"));
  EXPECT_FALSE(retry(StatusCode::kUnimplemented, "op Foo"));
  EXPECT_FALSE(retry(StatusCode::kInternal, "bug"));
  // Our own cancellation (Ctrl-C) is never retried.
  EXPECT_FALSE(IsRetryable(absl::CancelledError("x"), AttemptPhase::kCall,
                           /*cancelled_by_runner=*/true));
}

TEST(RetryPolicyTest, BackoffGrowsExponentiallyWithBoundedJitter) {
  RetryPolicy policy;
  policy.initial_backoff = absl::Seconds(1);
  policy.multiplier = 2;
  policy.max_backoff = absl::Seconds(5);
  policy.jitter = 0.2;
  // Nominal 1, 2, 4, then capped at 5; unit 0.5 is the nominal itself,
  // 0 and 1 its -20% / +20% ends.
  const auto seconds = [&](int retry, double unit) {
    return absl::ToDoubleSeconds(policy.Backoff(retry, unit));
  };
  EXPECT_NEAR(seconds(1, 0.5), 1.0, 1e-9);
  EXPECT_NEAR(seconds(2, 0.5), 2.0, 1e-9);
  EXPECT_NEAR(seconds(3, 0.5), 4.0, 1e-9);
  EXPECT_NEAR(seconds(4, 0.5), 5.0, 1e-9);
  EXPECT_NEAR(seconds(3, 0.0), 3.2, 1e-9);
  EXPECT_NEAR(seconds(3, 1.0), 4.8, 1e-9);
}

TEST(ReplicaPickerTest, RoundRobinSkipsReplicasThatFailedRecently) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  ReplicaPicker picker({"a", "b", "c"}, absl::Seconds(1), absl::Seconds(8));
  EXPECT_EQ(picker.Acquire(-1, t0), 0);
  EXPECT_EQ(picker.Acquire(-1, t0), 1);
  EXPECT_EQ(picker.Acquire(-1, t0), 2);
  EXPECT_EQ(picker.InFlight(), (std::vector<int>{1, 1, 1}));
  picker.Release(1, /*failed=*/true, t0);
  EXPECT_EQ(picker.Acquire(-1, t0), 0);
  EXPECT_EQ(picker.Acquire(-1, t0), 2);  // b cools down for 1 s
  EXPECT_EQ(picker.Acquire(-1, t0 + absl::Seconds(2)), 0);
  EXPECT_EQ(picker.Acquire(-1, t0 + absl::Seconds(2)), 1);  // recovered
}

TEST(ReplicaPickerTest, RetryAvoidsTheReplicaThatJustFailed) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  ReplicaPicker picker({"a", "b"}, absl::Seconds(1), absl::Seconds(8));
  EXPECT_EQ(picker.Acquire(/*avoid=*/1, t0), 0);
  picker.Release(0, false, t0);
  EXPECT_EQ(picker.Acquire(/*avoid=*/1, t0), 0);  // b skipped though its turn
}

TEST(ReplicaPickerTest, CooldownDoublesAndAllDownPicksFirstToRecover) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  ReplicaPicker picker({"a", "b"}, absl::Seconds(1), absl::Seconds(8));
  for (int r : {0, 1}) {
    ASSERT_EQ(picker.Acquire(-1, t0), r);
  }
  picker.Release(0, true, t0);  // a: 1 s
  picker.Release(1, true, t0);  // b: 1 s
  ASSERT_EQ(picker.Acquire(-1, t0), 0);
  picker.Release(0, true, t0);  // a again: 2 s
  EXPECT_EQ(picker.CoolUntil(0), t0 + absl::Seconds(2));
  EXPECT_EQ(picker.CoolUntil(1), t0 + absl::Seconds(1));
  EXPECT_EQ(picker.Acquire(-1, t0), 1);  // both down: b recovers first
  picker.Release(1, false, t0);
  EXPECT_EQ(picker.CoolUntil(1), absl::InfinitePast());  // success clears
}

class OutputDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        (std::filesystem::temp_directory_path() /
         absl::StrCat(
             "quantd_outdir_", getpid(), "_",
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
            .string();
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(OutputDirTest, CommitPublishesFilesAndRecordTogether) {
  auto out = OutputDir::Open(dir_);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE((*out)->ReadRecord("j").has_value());
  ASSERT_TRUE(
      (*out)->Commit("j", {{"a.bin", "AAA"}}, {{"input_digest", "d1"}}).ok());
  auto record = (*out)->ReadRecord("j");
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ((*record)["input_digest"], "d1");
  EXPECT_EQ(*ReadFileLimited(dir_ + "/j/a.bin", 100), "AAA");
  // A redo replaces the whole folder: stale files do not survive.
  ASSERT_TRUE(
      (*out)->Commit("j", {{"b.bin", "BB"}}, {{"input_digest", "d2"}}).ok());
  EXPECT_EQ((*(*out)->ReadRecord("j"))["input_digest"], "d2");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/j/a.bin"));
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    EXPECT_NE(e.path().filename().string().rfind(".tmp-", 0), 0u) << e.path();
  }
}

TEST_F(OutputDirTest, LockKeepsASecondRunnerOut) {
  auto first = OutputDir::Open(dir_);
  ASSERT_TRUE(first.ok()) << first.status();
  // flock locks belong to the open file description: a second open in this
  // process conflicts just as another process would.
  auto second = OutputDir::Open(dir_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(
      std::string(second.status().message()),
      HasSubstr(absl::StrCat("another quantctl batch (pid ", getpid(), ")")));
  first->reset();
  EXPECT_TRUE(OutputDir::Open(dir_).ok());
}

TEST_F(OutputDirTest, SymlinkedLockIsRefusedAndItsTargetKept) {
  std::filesystem::create_directories(dir_);
  const std::string victim = dir_ + "-victim";
  ASSERT_TRUE(WriteFileAtomically(victim, "precious").ok());
  std::filesystem::create_symlink(victim, dir_ + "/.lock");
  auto out = OutputDir::Open(dir_);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(out.status().message()),
              HasSubstr("/.lock is a symbolic link; refusing to follow it"));
  EXPECT_EQ(*ReadFileLimited(victim, 100), "precious");
  std::filesystem::remove(victim);
}

TEST_F(OutputDirTest, HardLinkedLockIsRefusedAndItsTargetKept) {
  std::filesystem::create_directories(dir_);
  const std::string victim = dir_ + "/victim";
  ASSERT_TRUE(WriteFileAtomically(victim, "precious").ok());
  std::filesystem::create_hard_link(victim, dir_ + "/.lock");
  auto out = OutputDir::Open(dir_);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()),
              HasSubstr("/.lock is not a regular file of its own"));
  EXPECT_EQ(*ReadFileLimited(victim, 100), "precious");
}

TEST_F(OutputDirTest, LeftoversOfADeadRunnerAreRemovedOnOpen) {
  std::filesystem::create_directories(dir_ + "/.tmp-j-999");
  ASSERT_TRUE(WriteFileAtomically(dir_ + "/.tmp-j-999/x", "half").ok());
  auto out = OutputDir::Open(dir_);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/.tmp-j-999"));
  EXPECT_FALSE((*out)->ReadRecord("j").has_value());
}

TEST(DigestsTest, TimingsDoNotChangeTheResultDigest) {
  const auto files = [](const std::string& timings) {
    return DigestFiles(
        {{"model.qdq.onnx", "onnx"},
         {"report.json",
          absl::StrCat("{\"b\":1,\"timings_seconds\":", timings, "}")},
         {"report.html", "<h2>Timings</h2>" + timings}});
  };
  const auto a = files("{\"calibrate\":1.5}");
  const auto b = files("{\"calibrate\":2.5}");
  EXPECT_NE(a[1].sha256, b[1].sha256);
  EXPECT_EQ(a[1].compared_sha256, b[1].compared_sha256);
  EXPECT_FALSE(a[1].deterministic);
  EXPECT_TRUE(a[2].compared_sha256.empty());
  EXPECT_EQ(ResultDigest(a), ResultDigest(b));
  const auto c = DigestFiles({{"model.qdq.onnx", "onnX"},
                              {"report.json", "{\"b\":1}"},
                              {"report.html", ""}});
  EXPECT_NE(ResultDigest(a), ResultDigest(c));
  // sha256("onnx"), from `printf onnx | sha256sum`.
  EXPECT_EQ(a[0].sha256,
            "87e93f89f2be0db364e8be052f79f389e6c2da239831922e24513288af522a43");
}

TEST(DigestsTest, InputDigestIgnoresTheRequestIdOnly) {
  v1::QuantizeRequest a;
  a.set_onnx_model("model");
  a.mutable_tpc()->set_name("imx500@4.0");
  v1::QuantizeRequest b = a;
  b.set_request_id("job/2");
  EXPECT_EQ(InputDigest(a), InputDigest(b));
  b.mutable_export_options()->set_activation_storage(
      v1::ACTIVATION_STORAGE_INT8);
  EXPECT_NE(InputDigest(a), InputDigest(b));
}

}  // namespace
}  // namespace quantd::batch
