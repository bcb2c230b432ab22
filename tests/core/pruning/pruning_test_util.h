// Shared helpers of the pruning tests: tiny models, TPCs with a given SIMD
// size, requests.
#ifndef QUANTD_TESTS_CORE_PRUNING_PRUNING_TEST_UTIL_H_
#define QUANTD_TESTS_CORE_PRUNING_PRUNING_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "quantd/v1/pruning.pb.h"
#include "quantd/v1/tpc.pb.h"

namespace quantd::pruning_test {

// The imx500 built-in with every op config's simd_size set to `simd`
// (0: cleared).
v1::TargetPlatformCapabilities TpcWithSimd(int simd);

// x [1, 2, 4, 4] -> Conv W1 [4, 2, 1, 1] + b1 -> Relu -> Conv W2 [3, 4, 1, 1]
// + b2 -> y. Output channels 1 and 3 of W1 and b1 are zero: dead after the
// Relu. 27 float parameters (108 bytes).
std::string DeadChannelModel();

// x [1, 3, 6, 6] -> Conv 8 (3x3, pad 1) -> BatchNormalization -> Relu ->
// Conv 8 (1x1) -> Mul by a per-channel [8, 1, 1] constant -> Relu ->
// Conv 4 (1x1) -> GlobalAveragePool -> Flatten -> Gemm (4 -> 16) -> Relu ->
// Gemm (16 -> 5) -> y [1, 5]. Fixed-seed random weights.
std::string ChainModel();

// `count` random samples for an input `name` of `shape`.
std::vector<v1::Sample> RandomSamples(const std::string& name,
                                      const std::vector<int64_t>& shape,
                                      int count, uint64_t seed);

v1::PruneRequest MakeRequest(const std::string& model, int simd,
                             const std::vector<v1::Sample>& samples);

}  // namespace quantd::pruning_test

#endif  // QUANTD_TESTS_CORE_PRUNING_PRUNING_TEST_UTIL_H_
