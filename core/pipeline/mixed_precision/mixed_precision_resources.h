// The resource calculator of mixed precision (MCT §1.4,
// resource_utilization_calculator.py) on the real graph, split in two: a
// ResourceLayout holds what does not depend on bit widths (which weights and
// activation tensors are quantized, their sizes, the memory cuts and the MACs
// of every kernel node); EvaluateResources prices it for one bit assignment.
//
//   weights    = sum over quantized weights of #params * bits / 8, with the
//                output channels padded to a multiple of the config's
//                simd_size when the TPC sets is_simd_padding;
//   activation = max over memory cuts of sum(size * bits / 8) of the quantized
//                activation tensors in the cut (fused-inner and float
//                tensors are not counted);
//   total      = max over cuts of (activation(cut) + weights);
//   BOPs       = sum over Conv/ConvTranspose/Gemm/MatMul of
//                MACs * kernel bits * bits of the input activation
//                (32 for a float kernel or input, MCT's FLOAT_BITWIDTH).
//
// Cuts: one per node of the model's topological schedule (its ONNX node
// order). The cut of node i holds node i's inputs and outputs and every
// tensor produced earlier (graph inputs included) that a later node or a
// graph output still needs, i.e. the tensors alive from their producer to
// their last consumer while node i executes. MCT builds the same kind of cut
// over the schedule its A* max-cut search picks (compute_graph_max_cut.py);
// we keep the model's order, so on branchy graphs our figure can exceed
// MCT's (never below it for the same schedule). Cuts contained in another
// cut are dropped: they can never hold the maximum.
#ifndef QUANTD_CORE_PIPELINE_MIXED_PRECISION_MIXED_PRECISION_RESOURCES_H_
#define QUANTD_CORE_PIPELINE_MIXED_PRECISION_MIXED_PRECISION_RESOURCES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace quantd {

// A quantized constant input: node index and input index in model.graph.
struct WeightRef {
  int node = 0;
  int input_index = 0;
  // Output-channel axis for SIMD padding (-1: none).
  int channel_axis = -1;
};

struct ResourceLayout {
  struct Weight {
    WeightRef ref;
    double elements = 0;
    int64_t channels = 1;  // along channel_axis (1 if none)
  };
  struct Activation {
    std::string tensor;
    double elements = 0;
  };
  struct Mac {
    int node = 0;
    double macs = 0;
    int weight = -1;      // index into weights (kernel), -1 = float
    int activation = -1;  // index into activations (input 0), -1 = float
  };
  std::vector<Weight> weights;
  std::vector<Activation> activations;
  // Each cut lists activation indices (sorted).
  std::vector<std::vector<int>> cuts;
  std::vector<Mac> macs;
};

// `activation_tensors`: the quantized activation tensors (node outputs and
// graph inputs); `weights`: the quantized constant inputs. Tensor sizes come
// from `shapes` (as seen on a calibration sample); unknown sizes count 0.
ResourceLayout BuildResourceLayout(
    const Model& model,
    const std::map<std::string, std::vector<int64_t>>& shapes,
    const std::vector<std::string>& activation_tensors,
    const std::vector<WeightRef>& weights);

// Bits per layout entry (parallel to layout.weights / layout.activations).
struct ResourceBits {
  std::vector<int> weight_bits;
  // SIMD width to pad the weight's channels to (0 = no padding).
  std::vector<int> weight_simd;
  std::vector<int> activation_bits;
};

struct ResourceBreakdown {
  double weights = 0;
  std::vector<double> cut_activation;  // per cut
  double activation = 0;               // max over cuts
  double total = 0;                    // max over cuts of cut + weights
  double bops = 0;
};

ResourceBreakdown EvaluateResources(const ResourceLayout& layout,
                                    const ResourceBits& bits);

// #params of one weight as stored with SIMD padding `simd` (0 = none).
double PaddedElements(const ResourceLayout::Weight& w, int simd);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_MIXED_PRECISION_MIXED_PRECISION_RESOURCES_H_
