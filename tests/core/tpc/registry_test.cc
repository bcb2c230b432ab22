#include "core/tpc/registry.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/tpc/builtins.h"
#include "core/tpc/json_io.h"
#include "core/tpc/tpc_ref.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/tpc/tpc_test_util.h"

namespace quantd::tpc {
namespace {

using quantd::v1::TargetPlatformCapabilities;
using ::testing::HasSubstr;

TpcRegistry& Builtins() {
  static TpcRegistry* r = [] {
    auto* reg = new TpcRegistry();
    EXPECT_TRUE(reg->AddBuiltins().ok());
    return reg;
  }();
  return *r;
}

std::string ResolvedVersion(std::string_view ref) {
  auto e = Builtins().ResolveEntry(ref);
  return e.ok() ? e->name + "@" + e->version
                : std::string(e.status().message());
}

TEST(VersionResolutionTest, ExactVersion) {
  EXPECT_EQ(ResolvedVersion("imx500@4.0"), "imx500@4.0");
  EXPECT_EQ(ResolvedVersion("imx500@1.0_lut"), "imx500@1.0_lut");
  EXPECT_EQ(ResolvedVersion("qnnpack@1.0_w8"), "qnnpack@1.0_w8");
}

TEST(VersionResolutionTest, MajorOnlyGivesLatestMinor) {
  EXPECT_EQ(ResolvedVersion("imx500@4"), "imx500@4.1");
  EXPECT_EQ(ResolvedVersion("imx500@v4"), "imx500@4.1");
  EXPECT_EQ(ResolvedVersion("imx500@3"), "imx500@3.0");
}

TEST(VersionResolutionTest, ExtendedMajorGivesLatestOfThatExtension) {
  EXPECT_EQ(ResolvedVersion("imx500@1_lut"), "imx500@1.0_lut");
  EXPECT_EQ(ResolvedVersion("imx500@3_lut"), "imx500@3.0_lut");
}

TEST(VersionResolutionTest, NoVersionGivesLatestPlainVersion) {
  EXPECT_EQ(ResolvedVersion("imx500"), "imx500@5.0");
  EXPECT_EQ(ResolvedVersion("qnnpack"), "qnnpack@1.0");
}

TEST(VersionResolutionTest, DefaultIsImx500V1) {
  EXPECT_EQ(ResolvedVersion("default"), "imx500@1.0");
}

TEST(VersionResolutionTest, UnknownVersionIsNotFoundListingWhatExists) {
  auto e = Builtins().ResolveEntry("imx500@4.2");
  ASSERT_EQ(e.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(e.status().message()),
              HasSubstr("TPC 'imx500@4.2' not found; available: "
                        "imx500@1.0, imx500@1.0_lut, imx500@1.0_pot"));
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("tflite@1.0"));
  EXPECT_EQ(Builtins().ResolveEntry("nope").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Builtins().ResolveEntry("imx500@9").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(VersionResolutionTest, MalformedReferenceIsInvalidArgument) {
  EXPECT_EQ(ParseTpcRef("a@b@c").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseTpcRef("@4").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseTpcRef("imx500@").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RegistryTest, ResolvedTpcCarriesItsVersion) {
  auto tpc = Builtins().Resolve("imx500@4");
  ASSERT_TRUE(tpc.ok());
  EXPECT_EQ((*tpc)->version(), "4.1");
  EXPECT_EQ((*tpc)->tpc_patch_version(), 1);
}

TEST(RegistryTest, DigestIsStableAndContentSensitive) {
  TargetPlatformCapabilities a = Imx500Tpc("4.0");
  TargetPlatformCapabilities b = Imx500Tpc("4.0");
  EXPECT_EQ(TpcDigest(a), TpcDigest(b));
  b.mutable_operator_set(0)->set_name("Shape");
  EXPECT_NE(TpcDigest(a), TpcDigest(b));
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("tpc_registry_test_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(path_ / name) << text;
    return (path_ / name).string();
  }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(RegistryTest, LoadsDirectoryOfJsonAndTextproto) {
  TempDir dir;
  // MCT's file: key from tpc_platform_type + minor.patch = tflite@1.0.
  dir.Write("from_mct.json",
            testing::ReadFile(testing::FixturePath("tflite.json")));
  TargetPlatformCapabilities custom = QnnpackTpc(true);
  custom.set_name("acme_tpc");
  dir.Write("acme@2.1.json", TpcToJson(custom));
  dir.Write("tiny@0.1.textproto", R"pb(
    name: "tiny"
    default_qco {
      quantization_configurations {
        activation_n_bits: 8
        supported_input_activation_n_bits: 8
        default_weight_attr_config { weights_n_bits: 8 }
      }
    }
  )pb");
  dir.Write("notes.txt", "ignored");
  TpcRegistry registry;
  ASSERT_TRUE(registry.LoadDirectory(dir.path()).ok())
      << registry.LoadDirectory(dir.path());
  auto tflite = registry.ResolveEntry("tflite@1.0");
  ASSERT_TRUE(tflite.ok()) << tflite.status();
  EXPECT_THAT(tflite->source, HasSubstr("from_mct.json"));
  auto acme = registry.ResolveEntry("acme@2");
  ASSERT_TRUE(acme.ok()) << acme.status();
  EXPECT_EQ(acme->version, "2.1");
  EXPECT_EQ(acme->tpc->name(), "acme_tpc");
  EXPECT_THAT(acme->source, HasSubstr("acme@2.1.json"));
  EXPECT_TRUE(registry.Resolve("tiny@0.1").ok());
  EXPECT_TRUE(registry.Resolve("tflite").ok());
  EXPECT_EQ(registry.List().size(), 3u);
}

TEST(RegistryTest, BadDirectoryFilesAreAllReportedAndGoodOnesKept) {
  TempDir dir;
  dir.Write("broken@1.0.json", "{not json");
  dir.Write("invalid@1.0.textproto", "name: \"x\"\n");  // no default_qco
  dir.Write("good@1.0.json", TpcToJson(TfliteTpc()));
  TpcRegistry registry;
  absl::Status s = registry.LoadDirectory(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("2 bad files"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("broken@1.0.json"));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("invalid@1.0.textproto: invalid TPC 'x'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("default_qco: missing"));
  EXPECT_TRUE(registry.Resolve("good@1.0").ok());
}

TEST(RegistryTest, MissingDirectoryIsNotFound) {
  TpcRegistry registry;
  EXPECT_EQ(registry.LoadDirectory("/nonexistent/tpcs").code(),
            absl::StatusCode::kNotFound);
}

TEST(InlineCacheTest, SameContentHitsAndSharesOneInstance) {
  TpcRegistry registry(4);
  auto a = registry.ResolveInline(Imx500Tpc("3.0"));
  auto b = registry.ResolveInline(Imx500Tpc("3.0"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  InlineCacheStats s = registry.inline_stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.size, 1u);
}

TEST(InlineCacheTest, InvalidInlineTpcIsRejectedAndNotCached) {
  TpcRegistry registry(4);
  TargetPlatformCapabilities bad = Imx500Tpc("3.0");
  bad.mutable_default_qco()->clear_quantization_configurations();
  auto r = registry.ResolveInline(bad);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.inline_stats().size, 0u);
}

TEST(InlineCacheTest, EvictsLeastRecentlyUsed) {
  TpcRegistry registry(2);
  auto make = [](int i) {
    TargetPlatformCapabilities t = QnnpackTpc(false);
    t.set_tpc_patch_version(i);
    return t;
  };
  auto first = registry.ResolveInline(make(1));
  ASSERT_TRUE(registry.ResolveInline(make(2)).ok());
  ASSERT_TRUE(registry.ResolveInline(make(1)).ok());  // 1 is now most recent
  ASSERT_TRUE(registry.ResolveInline(make(3)).ok());  // evicts 2
  InlineCacheStats s = registry.inline_stats();
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.size, 2u);
  EXPECT_EQ(s.capacity, 2u);
  auto again = registry.ResolveInline(make(1));
  EXPECT_EQ(again->get(), first->get());  // still cached
  const uint64_t misses = registry.inline_stats().misses;
  ASSERT_TRUE(registry.ResolveInline(make(2)).ok());  // was evicted
  EXPECT_EQ(registry.inline_stats().misses, misses + 1);
  // The evicted TPC handed out earlier stays alive for its holder.
  EXPECT_EQ((*first)->tpc_patch_version(), 1);
}

TEST(RegistryConcurrencyTest, ManyThreadsResolveAndInsert) {
  TpcRegistry registry(8);
  ASSERT_TRUE(registry.AddBuiltins().ok());
  std::vector<TargetPlatformCapabilities> inline_tpcs;
  for (int i = 0; i < 16; ++i) {
    TargetPlatformCapabilities t = QnnpackTpc(i % 2 == 0);
    t.set_tpc_patch_version(i);
    inline_tpcs.push_back(t);
  }
  constexpr int kThreads = 8;
  constexpr int kIterations = 200;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIterations; ++i) {
        auto r = registry.Resolve(i % 2 ? "imx500@4" : "default");
        if (!r.ok() || (*r)->version() != (i % 2 ? "4.1" : "1.0")) {
          ++failures[t];
        }
        const auto& want = inline_tpcs[(t * 7 + i) % inline_tpcs.size()];
        auto in = registry.ResolveInline(want);
        if (!in.ok() ||
            (*in)->tpc_patch_version() != want.tpc_patch_version()) {
          ++failures[t];
        }
        if (i % 50 == 0) {
          if (!registry
                   .Add("extra", std::to_string(t) + ".0", QnnpackTpc(false),
                        "test")
                   .ok()) {
            ++failures[t];
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << t;
  InlineCacheStats s = registry.inline_stats();
  EXPECT_EQ(s.hits + s.misses, uint64_t{kThreads * kIterations});
  EXPECT_LE(s.size, 8u);
  // Two threads can miss the same key at once; only one inserts it.
  EXPECT_GE(s.misses, s.size + s.evictions);
  EXPECT_EQ(ResolvedVersion("imx500@4"), "imx500@4.1");
  EXPECT_TRUE(registry.Resolve("extra").ok());
}

}  // namespace
}  // namespace quantd::tpc
