// Prunable sections (MCT's PruningSection): an entry layer whose output
// channels can be removed, the chain of per-channel nodes after it, and the
// exit layer whose input channels follow.
//
//   entry (Conv group 1 | Gemm | MatMul, constant weights)
//     -> intermediate* (BatchNormalization, unary activations, Add/Sub/Mul/
//        Div/PRelu with a constant that is scalar or per channel)
//     -> exit (Conv group 1 | Gemm | MatMul reading the chain as its data
//        input, with as many input channels as the entry has outputs)
//
// Every tensor on the chain has one consumer and is no graph output, so a
// residual Add or a Concat after the entry ends the search (MCT excludes
// such sections the same way). The channel axis is 1 after a Conv and the
// last one after a Gemm/MatMul.
#ifndef QUANTD_CORE_PRUNING_PRUNING_SECTION_H_
#define QUANTD_CORE_PRUNING_PRUNING_SECTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace quantd::pruning {

// One constant tensor whose `axis` runs over the section's channels.
struct ChannelTensor {
  std::string initializer;
  int axis = 0;
};

struct PruningSection {
  int entry = -1;  // node indices into the graph
  std::vector<int> intermediates;
  int exit = -1;
  int64_t channels = 0;  // entry output channels
  // The entry's kernel (output-channel axis) and bias, the intermediates'
  // per-channel constants, the exit's kernel (input-channel axis).
  std::vector<ChannelTensor> tensors;
  // Tensors on the chain (entry output, intermediate outputs): their shapes
  // change with the channel count.
  std::vector<std::string> chain_values;
  // The entry's kernel and its output-channel axis (the importance metrics
  // read it).
  ChannelTensor entry_kernel;
};

struct SectionSearch {
  std::vector<PruningSection> sections;  // in entry-node order
  // Entry-shaped layers that are not prunable, and why ("node 'c2' (Conv):
  // output read by 2 nodes").
  std::vector<std::string> rejected;
};

// The graph's prunable sections. The graph must be validated (topological
// order).
SectionSearch FindPruningSections(const Graph& graph);

}  // namespace quantd::pruning

#endif  // QUANTD_CORE_PRUNING_PRUNING_SECTION_H_
