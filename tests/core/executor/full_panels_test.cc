// The AVX-512 kernel for Eigen's full 24-row panels (full_panels_avx512.h)
// against Eigen's own GEMM: bit for bit, since every output's additions
// keep Eigen's order.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/executor/blocked_gemm.h"
#include "core/executor/full_panels_avx512.h"
#include "core/executor/gemm.h"
#include "core/executor/packed_gemm.h"
#include "gtest/gtest.h"

namespace quantd {
namespace {

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// Restores the kernel for the tests that follow.
class FullPanelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!exec::UseFullPanelsAvx512()) {
      GTEST_SKIP() << "this CPU has no AVX-512F";
    }
  }
  void TearDown() override { exec::SetFullPanelsAvx512Enabled(true); }
};

// Oracle: Eigen's product (EigenGemmBlock, compiled once in the executor
// library). Shapes: one and two panels with every tail length that leaves
// rows to Eigen's 16-, 8-, 4- and 1-row paths, 1 to 9 weight rows (the
// 4-column panels and single columns of the packed right-hand side), and
// depths Eigen cuts into several blocks; with and without accumulation.
TEST_F(FullPanelsTest, SameBitsAsEigensProduct) {
  uint32_t seed = 7;
  for (int64_t width : {24, 25, 40, 47, 48, 63, 71, 72, 96, 100, 337}) {
    for (int64_t rows : {2, 3, 4, 5, 7, 9, 24}) {
      for (int64_t depth : {9, 300, 865}) {
        const std::vector<float> w = Random(rows * depth, ++seed);
        const std::vector<float> x = Random(depth * width, ++seed);
        const std::vector<float> start = Random(rows * width, ++seed);
        exec::PackedWeights packed(w.data(), rows, depth);
        for (bool accumulate : {false, true}) {
          std::vector<float> want = start, got = start;
          exec::EigenGemmBlock<float>(false, false, rows, width, depth, 1.0f,
                                      w.data(), depth, x.data(), width,
                                      want.data(), width, accumulate);
          ASSERT_TRUE(packed.Multiply(0, rows, x.data(), width, width,
                                      got.data(), width, accumulate));
          ASSERT_EQ(
              std::memcmp(want.data(), got.data(), want.size() * sizeof(float)),
              0)
              << rows << "x" << depth << " * " << depth << "x" << width
              << " accumulate " << accumulate;
        }
      }
    }
  }
}

template <typename T>
std::vector<T> RandomOf(int64_t n, uint32_t seed) {
  const std::vector<float> f = Random(n, seed);
  return std::vector<T>(f.begin(), f.end());
}

// GemmBlock (Eigen's blocked GEMM step by step, full panels on AVX-512)
// against Eigen's own evaluation of the same expression (EigenGemmBlock),
// bit for bit: float and double, every transpose, alpha 1 and not, with
// and without accumulation, shapes with every tail of the 24- and 12-row
// panels, 1-9 columns, depths Eigen blocks, and shapes Eigen evaluates
// without its GEMM (a vector, a coefficient-based product).
template <typename T>
void ExpectGemmBlockIsEigens() {
  uint32_t seed = 100;
  int products = 0;
  for (int64_t n : {2, 5, 24, 37, 60, 131}) {
    for (int64_t m : {1, 3, 4, 9, 40}) {
      for (int64_t k : {3, 64, 700}) {
        for (int t = 0; t < 4; ++t) {
          const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
          const std::vector<T> a = RandomOf<T>(m * k, ++seed);
          const std::vector<T> b = RandomOf<T>(k * n, ++seed);
          const std::vector<T> start = RandomOf<T>(m * n, ++seed);
          for (T alpha : {T(1), T(0.37)}) {
            for (bool accumulate : {false, true}) {
              std::vector<T> want = start, got = start;
              const int64_t lda = ta ? m : k, ldb = tb ? k : n;
              exec::EigenGemmBlock<T>(ta, tb, m, n, k, alpha, a.data(), lda,
                                      b.data(), ldb, want.data(), n,
                                      accumulate);
              exec::GemmBlock<T>(ta, tb, m, n, k, alpha, a.data(), lda,
                                 b.data(), ldb, got.data(), n, accumulate);
              // BlockedGemm takes exactly the products Eigen blocks (its
              // dispatch: k + m + n >= 20, m and n >= 2), so the comparison
              // covers it and not Eigen's product twice.
              std::vector<T> blocked = start;
              EXPECT_EQ(exec::BlockedGemm<T>(ta, tb, m, n, k, alpha, a.data(),
                                             lda, b.data(), ldb, blocked.data(),
                                             n, accumulate),
                        k + m + n >= 20 && m >= 2 && n >= 2);
              ASSERT_EQ(
                  std::memcmp(want.data(), got.data(), want.size() * sizeof(T)),
                  0)
                  << sizeof(T) << "-byte " << m << "x" << k << " * " << k << "x"
                  << n << " trans " << ta << tb << " alpha " << alpha
                  << " accumulate " << accumulate;
              ++products;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(products, 6 * 5 * 3 * 4 * 4);
}

// With the kernel where the CPU has AVX-512, and without it: BlockedGemm's
// own sequence of Eigen's calls, which every x86-64 machine runs.
template <typename T>
void ExpectGemmBlockIsEigensWithAndWithoutTheKernel() {
  const bool have = exec::UseFullPanelsAvx512();
  for (bool kernel : {true, false}) {
    if (kernel && !have) continue;
    exec::SetFullPanelsAvx512Enabled(kernel);
    ExpectGemmBlockIsEigens<T>();
  }
  exec::SetFullPanelsAvx512Enabled(true);
}

TEST(BlockedGemmTest, GemmBlockGivesEigensBitsInFloat) {
  ExpectGemmBlockIsEigensWithAndWithoutTheKernel<float>();
}

TEST(BlockedGemmTest, GemmBlockGivesEigensBitsInDouble) {
  ExpectGemmBlockIsEigensWithAndWithoutTheKernel<double>();
}

// The kernel is what runs: turned off, the same product takes Eigen's
// micro-kernel for every row, and the bits stay.
TEST_F(FullPanelsTest, TurningItOffKeepsTheBits) {
  const int64_t rows = 24, depth = 288, width = 480;
  const std::vector<float> w = Random(rows * depth, 1);
  const std::vector<float> x = Random(depth * width, 2);
  exec::PackedWeights packed(w.data(), rows, depth);
  std::vector<float> on(rows * width), off(rows * width);
  ASSERT_TRUE(packed.Multiply(0, rows, x.data(), width, width, on.data(), width,
                              false));
  exec::SetFullPanelsAvx512Enabled(false);
  EXPECT_FALSE(exec::UseFullPanelsAvx512());
  ASSERT_TRUE(packed.Multiply(0, rows, x.data(), width, width, off.data(),
                              width, false));
  EXPECT_EQ(std::memcmp(on.data(), off.data(), on.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace quantd
