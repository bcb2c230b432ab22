// Rewrites shared by the channel equalizations (channel_equalization.h,
// data_channel_equalization.h): a layer whose input channel c is divided by
// s[c] computes the same function on an input whose channel c was
// multiplied by s[c].
#ifndef QUANTD_CORE_PIPELINE_PREP_CHANNEL_SCALING_H_
#define QUANTD_CORE_PIPELINE_PREP_CHANNEL_SCALING_H_

#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/graph_index.h"

namespace quantd {

// Conv or ConvTranspose.
bool IsLinear2d(const Node& n);

// A float initializer read by one node only (safe to rewrite in place).
Tensor* OwnFloatInit(Graph* g, const GraphIndex& index,
                     const std::string& name);

// A Pad that adds zeros (constant mode, value absent or 0) to its input.
bool IsZeroPad(const Graph& g, const Node& n);

// Divides input channel c of `layer`'s (Conv|ConvTranspose) weight `w` by
// s[c]; false, leaving `w` as it was, when the layout is not one this can
// scale (grouped but not depthwise).
bool ScaleInputChannels(const Node& layer, const std::vector<double>& s,
                        Tensor* w);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_PREP_CHANNEL_SCALING_H_
