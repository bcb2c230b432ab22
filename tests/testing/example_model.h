// A small, deterministic example CNN classifier and sample images, used by
// scripts/demo.sh (through bench/ptq/make_example), the PTQ benchmark and
// the pipeline tests. Input "image" [1,3,16,16] -> Conv+BN+Relu ->
// depthwise Conv+Clip(0,6) -> 1x1 Conv+Relu -> MaxPool -> GlobalAveragePool
// -> Flatten -> Gemm -> Softmax -> "probs" [1,10]. Weights and images come
// from a fixed-seed generator, so every build produces the same bytes.
#ifndef QUANTD_TESTS_TESTING_EXAMPLE_MODEL_H_
#define QUANTD_TESTS_TESTING_EXAMPLE_MODEL_H_

#include <cstdint>
#include <vector>

#include "core/graph/graph.h"
#include "core/pipeline/job/samples.h"

namespace quantd {

Model MakeExampleCnn();

// `count` images with smooth structure (gradients, blobs) plus noise,
// roughly standardised like a preprocessing pipeline's output.
std::vector<SampleFeeds> MakeExampleImages(int count, uint64_t seed);

}  // namespace quantd

#endif  // QUANTD_TESTS_TESTING_EXAMPLE_MODEL_H_
