// Helpers shared by the finite-difference gradient tests.
#ifndef QUANTD_TESTS_CORE_TRAIN_GRADIENT_TEST_UTIL_H_
#define QUANTD_TESTS_CORE_TRAIN_GRADIENT_TEST_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace quantd::train::testing {

// n normal(0, scale) values from a fixed seed.
inline std::vector<double> Random(size_t n, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

inline double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace quantd::train::testing

#endif  // QUANTD_TESTS_CORE_TRAIN_GRADIENT_TEST_UTIL_H_
