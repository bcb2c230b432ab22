// .npy reading and writing against files numpy wrote (testdata/, made by
// make_testdata.py): the expected values are the arrays that script built.
#include "core/io/npy.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/io/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace quantd {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::string TestData(const std::string& name) {
  const char* root = std::getenv("QUANTD_SOURCE_DIR");
  return absl::StrCat(root ? root : ".", "/tests/core/io/testdata/", name);
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  auto span = t.span<T>();
  return std::vector<T>(span.begin(), span.end());
}

// A v1 file with the given header text and data, padded like numpy's.
std::string MakeNpy(const std::string& dict, const std::string& data,
                    int major = 1) {
  std::string header = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  const uint32_t len = header.size();
  for (size_t i = 0; i < prefix - 8; ++i) {
    out.push_back(static_cast<char>((len >> (8 * i)) & 0xFF));
  }
  return out + header + data;
}

std::string FloatBytes(std::vector<float> v) {
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(float));
}

TEST(NpyReadTest, ReadsFloat32COrder) {
  auto t = ReadNpyFile(TestData("f4_2x3.npy"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kFloat);
  EXPECT_THAT(t->shape(), ElementsAre(2, 3));
  // np.arange(6) * 0.5
  EXPECT_THAT(Values<float>(*t), ElementsAre(0, 0.5, 1, 1.5, 2, 2.5));
}

TEST(NpyReadTest, SwapsBigEndianFloat64) {
  auto t = ReadNpyFile(TestData("f8_be.npy"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kDouble);
  EXPECT_THAT(Values<double>(*t), ElementsAre(1.5, -2.25, 3e10));
}

TEST(NpyReadTest, TransposesFortranOrderToRowMajor) {
  auto t = ReadNpyFile(TestData("i8_fortran_2x3x4.npy"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->shape(), ElementsAre(2, 3, 4));
  // np.arange(24).reshape(2,3,4): row-major element k has value k.
  std::vector<int64_t> want(24);
  for (int k = 0; k < 24; ++k) want[k] = k;
  EXPECT_THAT(Values<int64_t>(*t), ElementsAreArray(want));
}

TEST(NpyReadTest, HandlesBigEndianFortranInt16) {
  auto t = ReadNpyFile(TestData("i2_be_fortran_2x3.npy"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->shape(), ElementsAre(2, 3));
  EXPECT_THAT(Values<int16_t>(*t), ElementsAre(1, -2, 300, -400, 5, 32767));
}

TEST(NpyReadTest, ReadsEveryIntegerAndBoolType) {
  auto u1 = ReadNpyFile(TestData("u1.npy"));
  ASSERT_TRUE(u1.ok()) << u1.status();
  EXPECT_THAT(Values<uint8_t>(*u1), ElementsAre(0, 7, 255));
  auto i1 = ReadNpyFile(TestData("i1.npy"));
  ASSERT_TRUE(i1.ok()) << i1.status();
  EXPECT_THAT(Values<int8_t>(*i1), ElementsAre(-128, 0, 127));
  auto b = ReadNpyFile(TestData("bool.npy"));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->dtype(), DType::kBool);
  EXPECT_THAT(Values<bool>(*b), ElementsAre(true, false, true));
  auto u2 = ReadNpyFile(TestData("u2_be.npy"));
  ASSERT_TRUE(u2.ok()) << u2.status();
  EXPECT_THAT(Values<uint16_t>(*u2), ElementsAre(1, 65535));
  auto u4 = ReadNpyFile(TestData("u4.npy"));
  ASSERT_TRUE(u4.ok()) << u4.status();
  EXPECT_THAT(Values<uint32_t>(*u4), ElementsAre(4000000000u));
  auto u8 = ReadNpyFile(TestData("u8.npy"));
  ASSERT_TRUE(u8.ok()) << u8.status();
  EXPECT_THAT(Values<uint64_t>(*u8), ElementsAre(18446744073709551615ull));
  auto i4 = ReadNpyFile(TestData("i4_be.npy"));
  ASSERT_TRUE(i4.ok()) << i4.status();
  EXPECT_THAT(Values<int32_t>(*i4), ElementsAre(-5, 123456789));
}

TEST(NpyReadTest, KeepsFloat16Bits) {
  auto t = ReadNpyFile(TestData("f2.npy"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kFloat16);
  // IEEE half: 1.0 = 0x3C00, -0.5 = 0xB800, 65504 = 0x7BFF.
  std::vector<uint16_t> bits(3);
  std::memcpy(bits.data(), t->raw(), 6);
  EXPECT_THAT(bits, ElementsAre(0x3C00, 0xB800, 0x7BFF));
}

TEST(NpyReadTest, ReadsScalarAndEmptyArrays) {
  auto s = ReadNpyFile(TestData("scalar_f4.npy"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->rank(), 0);
  EXPECT_THAT(Values<float>(*s), ElementsAre(3.5f));
  auto e = ReadNpyFile(TestData("empty_0x3.npy"));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_THAT(e->shape(), ElementsAre(0, 3));
  EXPECT_EQ(e->num_elements(), 0);
}

TEST(NpyReadTest, ReadsFormatVersions2And3) {
  for (const char* name : {"f4_v2.npy", "f4_v3.npy"}) {
    auto t = ReadNpyFile(TestData(name));
    ASSERT_TRUE(t.ok()) << name << ": " << t.status();
    EXPECT_THAT(t->shape(), ElementsAre(1, 2));
    EXPECT_THAT(Values<float>(*t), ElementsAre(1.0f, 2.0f));
  }
}

TEST(NpyWriteTest, ReproducesNumpySaveBytes) {
  // Each tensor equals the array make_testdata.py saved as write_*.npy.
  struct Case {
    const char* file;
    Tensor tensor;
  } cases[] = {
      {"write_f4_2x3.npy",
       Tensor::FromVector<float>({0, 0.5, 1, 1.5, 2, 2.5}, {2, 3})},
      {"write_i8_5.npy", Tensor::FromVector<int64_t>({-2, -1, 0, 1, 2}, {5})},
      {"write_f8_scalar.npy", Tensor::FromVector<double>({-1.25}, {})},
      {"write_bool_3.npy", Tensor::FromVector<bool>({true, false, true}, {3})},
      // 123456789012 = 7 * 17636684144 + 4, so 4 + 3 = 7 zeros
      {"write_u1_big.npy", Tensor(DType::kUint8, {1, 7})},
  };
  for (const Case& c : cases) {
    auto want = ReadFileLimited(TestData(c.file), 1 << 20);
    ASSERT_TRUE(want.ok()) << want.status();
    auto got = SerializeNpy(c.tensor);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, *want) << c.file;
  }
}

TEST(NpyWriteTest, RoundTripsThroughAFile) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/npy_round_trip/out.npy");
  Tensor t = Tensor::FromVector<int16_t>({-7, 0, 9, 300}, {2, 1, 2});
  ASSERT_TRUE(WriteNpyFile(path, t).ok());
  auto back = ReadNpyFile(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(back->shape(), ElementsAre(2, 1, 2));
  EXPECT_THAT(Values<int16_t>(*back), ElementsAre(-7, 0, 9, 300));
}

TEST(NpyWriteTest, RejectsBfloat16) {
  auto s = SerializeNpy(Tensor(DType::kBfloat16, {2}));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("bfloat16"));
}

TEST(NpyMalformedTest, RejectsBadMagic) {
  auto t = ParseNpy("not numpy at all", "a.npy");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("a.npy: not a .npy file"));
}

TEST(NpyMalformedTest, RejectsTruncatedHeader) {
  std::string bytes =
      MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
              FloatBytes({1, 2}));
  auto t = ParseNpy(bytes.substr(0, 30), "t.npy");
  EXPECT_THAT(t.status().message(), HasSubstr("truncated .npy header"));
}

TEST(NpyMalformedTest, RejectsDataSizeMismatch) {
  std::string bytes =
      MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
              FloatBytes({1, 2}));
  auto t = ParseNpy(bytes, "short.npy");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(),
              HasSubstr("short.npy: .npy data has 8 bytes, shape (3) of <f4 "
                        "needs 12"));
}

TEST(NpyMalformedTest, RejectsHugeClaimedShapeBeforeAllocating) {
  std::string bytes = MakeNpy(
      "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000, "
      "1000000), }",
      "");
  auto t = ParseNpy(bytes, "huge.npy");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("exceeds the limit"));
}

TEST(NpyMalformedTest, RejectsUnsupportedDtypes) {
  for (const char* descr : {"<c8", "|O", "<U4", "|S3", "<M8[s]", "<f16"}) {
    std::string bytes =
        MakeNpy(absl::StrCat("{'descr': '", descr,
                             "', 'fortran_order': False, 'shape': (0,), }"),
                "");
    auto t = ParseNpy(bytes, "x.npy");
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << descr;
    EXPECT_THAT(t.status().message(),
                HasSubstr(absl::StrCat("dtype '", descr, "'")));
  }
}

TEST(NpyMalformedTest, RejectsStructuredDtype) {
  std::string bytes = MakeNpy(
      "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
      FloatBytes({1}));
  auto t = ParseNpy(bytes, "s.npy");
  EXPECT_THAT(t.status().message(), HasSubstr("structured dtypes"));
}

TEST(NpyMalformedTest, RejectsMissingDuplicateAndUnknownKeys) {
  const std::string data = FloatBytes({1});
  auto missing =
      ParseNpy(MakeNpy("{'descr': '<f4', 'shape': (1,), }", data), "m.npy");
  EXPECT_THAT(missing.status().message(),
              HasSubstr("missing key 'fortran_order'"));
  auto duplicate = ParseNpy(
      MakeNpy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
              "'shape': (1,), }",
              data),
      "d.npy");
  EXPECT_THAT(duplicate.status().message(), HasSubstr("duplicate key 'descr'"));
  auto unknown = ParseNpy(
      MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), "
              "'extra': 1}",
              data),
      "u.npy");
  EXPECT_THAT(unknown.status().message(), HasSubstr("unexpected key 'extra'"));
}

TEST(NpyMalformedTest, RejectsNegativeAndNonIntegerDims) {
  for (const char* shape : {"(-1,)", "(2.5,)", "(a,)", "[2]"}) {
    auto t = ParseNpy(
        MakeNpy(absl::StrCat("{'descr': '<f4', 'fortran_order': False, "
                             "'shape': ",
                             shape, ", }"),
                ""),
        "neg.npy");
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << shape;
    EXPECT_THAT(t.status().message(), HasSubstr("neg.npy: malformed"));
  }
}

TEST(NpyMalformedTest, RejectsUnknownVersion) {
  std::string bytes =
      MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
              FloatBytes({1}));
  bytes[6] = 9;
  auto t = ParseNpy(bytes, "v.npy");
  EXPECT_THAT(t.status().message(), HasSubstr("format version 9.0"));
}

TEST(NpyMalformedTest, HeaderLengthPastEndIsAnError) {
  std::string bytes =
      MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
              FloatBytes({1}), /*major=*/2);
  bytes[8] = '\xff';
  bytes[9] = '\xff';
  bytes[10] = '\xff';
  bytes[11] = '\x7f';
  auto t = ParseNpy(bytes, "len.npy");
  EXPECT_THAT(t.status().message(), HasSubstr("truncated .npy header"));
}

TEST(NpyFileTest, MissingFileIsNotFound) {
  auto t = ReadNpyFile(TestData("does_not_exist.npy"));
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(t.status().message(), HasSubstr("does_not_exist.npy"));
}

}  // namespace
}  // namespace quantd
