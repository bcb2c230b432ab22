// The sample-set layout of DESIGN.md: folders per sample, sanitised input
// names, plain files for single-input models, TensorProto .pb files.
#include "core/io/sample_set.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/io/file_util.h"
#include "core/io/npy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string SampleTestData(const std::string& name) {
  const char* root = std::getenv("QUANTD_SOURCE_DIR");
  return absl::StrCat(root ? root : ".", "/tests/core/io/testdata/", name);
}

// A fresh, empty folder per test.
std::string FreshDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/sample_set_",
                   info->test_suite_name(), "_", info->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void Put(const std::string& path, const Tensor& t) {
  ASSERT_TRUE(WriteNpyFile(path, t).ok()) << path;
}

Tensor F(float v) { return Tensor::FromVector<float>({v}, {1}); }

TEST(SanitizeTensorNameTest, ReplacesCharactersOutsideTheSafeSet) {
  EXPECT_EQ(SanitizeTensorName("input:0"), "input_0");
  EXPECT_EQ(SanitizeTensorName("x.1"), "x.1");
  EXPECT_EQ(SanitizeTensorName("a/b c-d_e"), "a_b_c-d_e");
  EXPECT_EQ(SanitizeTensorName("onnx::Flatten_0"), "onnx__Flatten_0");
}

TEST(ReadSampleSetTest, ReadsOneFolderPerSampleInByteOrder) {
  const std::string dir = FreshDir();
  // Byte-wise order: "B" < "a" < "s10" < "s2".
  for (const auto& [name, v] : std::vector<std::pair<std::string, float>>{
           {"s2", 2}, {"s10", 10}, {"a", 0}, {"B", -1}}) {
    Put(absl::StrCat(dir, "/", name, "/x.npy"), F(v));
    Put(absl::StrCat(dir, "/", name, "/sr.npy"),
        Tensor::FromVector<int64_t>({16000}, {}));
  }
  auto set = ReadSampleSet(dir, {"x", "sr"});
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(set->names, ElementsAre("B", "a", "s10", "s2"));
  ASSERT_EQ(set->size(), 4u);
  EXPECT_EQ(set->samples[2].at("x").data<float>()[0], 10.0f);
  EXPECT_EQ(set->samples[2].at("sr").data<int64_t>()[0], 16000);
  EXPECT_EQ(set->samples[2].at("sr").rank(), 0);
}

TEST(ReadSampleSetTest, MatchesSanitisedFileNamesToInputs) {
  const std::string dir = FreshDir();
  Put(dir + "/s0/input_0.npy", F(1));
  Put(dir + "/s0/onnx__Flatten_0.npy", F(2));
  auto set = ReadSampleSet(dir, {"input:0", "onnx::Flatten_0"});
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->samples[0].at("input:0").data<float>()[0], 1.0f);
  EXPECT_EQ(set->samples[0].at("onnx::Flatten_0").data<float>()[0], 2.0f);
}

TEST(ReadSampleSetTest, AcceptsPlainFilesForASingleInputModel) {
  const std::string dir = FreshDir();
  Put(dir + "/img1.npy", F(1));
  Put(dir + "/img0.npy", F(0));
  fs::copy_file(SampleTestData("tensor_f4_2x2.pb"), dir + "/img2.pb");
  std::ofstream(dir + "/README.txt") << "ignored";
  auto set = ReadSampleSet(dir, {"x"});
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(set->names, ElementsAre("img0", "img1", "img2"));
  EXPECT_EQ(set->samples[1].at("x").data<float>()[0], 1.0f);
  // make_testdata.py: [[1, 2], [3, 4]] as a TensorProto.
  const Tensor& pb = set->samples[2].at("x");
  EXPECT_THAT(pb.shape(), ElementsAre(2, 2));
  EXPECT_EQ(pb.data<float>()[3], 4.0f);
}

TEST(ReadSampleSetTest, ReadsTensorProtoFilesInSampleFolders) {
  const std::string dir = FreshDir();
  fs::create_directories(dir + "/s0");
  fs::copy_file(SampleTestData("tensor_i64_3.pb"), dir + "/s0/idx.pb");
  auto set = ReadSampleSet(dir, {"idx"});
  ASSERT_TRUE(set.ok()) << set.status();
  const Tensor& t = set->samples[0].at("idx");
  ASSERT_EQ(t.dtype(), DType::kInt64);
  EXPECT_THAT(std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + 3),
              ElementsAre(-1, 0, 9));
}

TEST(ReadSampleSetTest, PlainFilesNeedASingleInputModel) {
  const std::string dir = FreshDir();
  Put(dir + "/s0.npy", F(0));
  auto set = ReadSampleSet(dir, {"input", "sr"});
  EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(set.status().message(),
              HasSubstr("need a single-input model; this one has 2 inputs "
                        "(input, sr)"));
}

TEST(ReadSampleSetTest, MissingInputNamesTheSampleAndInput) {
  const std::string dir = FreshDir();
  Put(dir + "/s0/input.npy", F(0));
  auto set = ReadSampleSet(dir, {"input", "h:0"});
  EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(set.status().message(),
              HasSubstr("s0: missing h_0.npy for input 'h:0'"));
}

TEST(ReadSampleSetTest, FileMatchingNoInputIsAnError) {
  const std::string dir = FreshDir();
  Put(dir + "/s0/input.npy", F(0));
  Put(dir + "/s0/inptu.npy", F(0));
  auto set = ReadSampleSet(dir, {"input"});
  EXPECT_THAT(set.status().message(),
              HasSubstr("inptu.npy: no model input is named 'inptu'"));
}

TEST(ReadSampleSetTest, CorruptFileNamesFileAndInput) {
  const std::string dir = FreshDir();
  fs::create_directories(dir + "/s0");
  ASSERT_TRUE(WriteFileAtomically(dir + "/s0/x.npy", "garbage").ok());
  auto set = ReadSampleSet(dir, {"x"});
  EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(set.status().message(), HasSubstr("input 'x': "));
  EXPECT_THAT(set.status().message(), HasSubstr("s0/x.npy: not a .npy file"));
}

TEST(ReadSampleSetTest, MixedLayoutIsAnError) {
  const std::string dir = FreshDir();
  Put(dir + "/s0/x.npy", F(0));
  Put(dir + "/s1.npy", F(1));
  auto set = ReadSampleSet(dir, {"x"});
  EXPECT_THAT(set.status().message(),
              HasSubstr("mixes sample folders ('s0') and plain tensor files "
                        "('s1.npy')"));
}

TEST(ReadSampleSetTest, EmptyAndMissingFolders) {
  const std::string dir = FreshDir();
  auto empty = ReadSampleSet(dir, {"x"});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr("no samples"));
  auto missing = ReadSampleSet(dir + "/nope", {"x"});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST(ReadSampleSetTest, InputsCollidingAfterSanitisingAreAnError) {
  const std::string dir = FreshDir();
  Put(dir + "/s0/a_b.npy", F(0));
  auto set = ReadSampleSet(dir, {"a:b", "a/b"});
  EXPECT_THAT(set.status().message(),
              HasSubstr("inputs 'a:b' and 'a/b' have the same sample file "
                        "name 'a_b'"));
}

TEST(ReadSampleSetTest, EnforcesTheTotalSizeLimit) {
  const std::string dir = FreshDir();
  Put(dir + "/s0/x.npy", Tensor(DType::kFloat, {64}));
  Put(dir + "/s1/x.npy", Tensor(DType::kFloat, {64}));
  SampleSetOptions options;
  options.max_total_bytes = 400;  // each file is 128 + 256 bytes
  auto set = ReadSampleSet(dir, {"x"}, options);
  EXPECT_EQ(set.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(set.status().message(), HasSubstr("s1/x.npy"));
}

TEST(WriteSampleSetTest, WritesTheSameLayoutItReads) {
  const std::string dir = FreshDir();
  SampleSet set;
  set.names = {"s0", "s1"};
  set.samples = {{{"out:0", F(1)}, {"hn", F(2)}},
                 {{"out:0", F(3)}, {"hn", F(4)}}};
  ASSERT_TRUE(WriteSampleSet(dir, set).ok());
  EXPECT_TRUE(fs::exists(dir + "/s1/out_0.npy"));
  auto back = ReadSampleSet(dir, {"out:0", "hn"});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(back->names, ElementsAre("s0", "s1"));
  EXPECT_EQ(back->samples[1].at("hn").data<float>()[0], 4.0f);
}

TEST(WriteSampleSetTest, RejectsSampleNamesThatLeaveTheFolder) {
  const std::string dir = FreshDir();
  for (const char* bad : {"..", "a/b", ""}) {
    auto s = WriteSample(dir, bad, {{"x", F(0)}});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace quantd
