// Data-free calibration samples (MCT's data_generation): random images are
// optimised with Adam so that the batch mean / std of every BatchNormalization
// input match the layer's running statistics (plus MCT's output loss), through
// MCT's smoothing / flip / crop / clip image pipeline. Gradients come from
// core/autodiff on quantd's own executor. Images are independent given the
// batch statistics, so each runs on its own pool thread; results do not depend
// on the pool size.
//
//   ASSIGN_OR_RETURN(GeneratedData d,
//                    GenerateData(model, options, {&pool, &token, &sink}));
#ifndef QUANTD_CORE_DATAGEN_DATA_GENERATION_H_
#define QUANTD_CORE_DATAGEN_DATA_GENERATION_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/datagen/image_pipeline.h"
#include "core/datagen/options.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"
#include "core/runtime/cancellation.h"
#include "core/runtime/progress.h"
#include "core/runtime/thread_pool.h"

namespace quantd::datagen {

struct DataGenContext {
  ThreadPool* pool = nullptr;  // null: the caller's thread only
  const CancellationToken* cancel = nullptr;
  ProgressSink* progress = nullptr;  // stage "generate"
};

struct GeneratedData {
  std::string input_name;
  std::vector<Tensor> samples;  // [1, C, H, W] each
  int64_t aligned_tensors = 0;
  double first_loss = 0, final_loss = 0;  // BN + output loss, last batch
  // E.g. the aligned tensors constrain only the tail of the network
  // (AlignmentCoverageWarning).
  std::vector<std::string> warnings;
};

// A warning when more than half of the graph's Conv/Gemm/MatMul layers lie
// in one run without an aligned tensor (before the first, or between two):
// those layers are unconstrained (an export that folded most
// BatchNormalization layers), and calibration from such images measured
// worse than noise (ppocr_rec, docs/data_generation.md). Empty otherwise.
std::string AlignmentCoverageWarning(const Graph& graph,
                                     const std::vector<std::string>& aligned);

// The model's single float [N, C, H, W] image input (its name in *name)
// and the image shape generated for it: options.shape, which must agree with
// every static dim the input declares, or the declared dims. Errors name the
// input and the dim.
absl::StatusOr<ImageGeometry> InputGeometry(const Graph& g,
                                            const DataGenOptions& o,
                                            std::string* name);

absl::StatusOr<GeneratedData> GenerateData(std::shared_ptr<const Model> model,
                                           const DataGenOptions& options,
                                           const DataGenContext& context = {});

}  // namespace quantd::datagen

#endif  // QUANTD_CORE_DATAGEN_DATA_GENERATION_H_
