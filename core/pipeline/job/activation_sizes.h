// One sample's activations as the admission estimate counts them
// (preflight.h): the model's shapes inferred for the sample, then the bytes
// of every activation and the most of them alive at once.
#ifndef QUANTD_CORE_PIPELINE_JOB_ACTIVATION_SIZES_H_
#define QUANTD_CORE_PIPELINE_JOB_ACTIVATION_SIZES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/pipeline/job/samples.h"

namespace quantd {

// Input name -> shape of one sample: what the estimates need of it, known
// without allocating the sample (a generated image of any size).
using InputShapes = std::map<std::string, std::vector<int64_t>>;

// The first calibration sample's input shapes (none without samples).
InputShapes FirstSampleShapes(const std::vector<SampleFeeds>& calibration);

// Infers `model`'s shapes for the given input shapes, else (none, or
// inference fails) for the declared ones; false when that fails too (the
// model then holds what inference annotated).
bool InferSampleShapes(const InputShapes& shapes, Model* model);
// The same for the first calibration sample's shapes.
bool InferSampleShapes(const std::vector<SampleFeeds>& calibration,
                       Model* model);

// One sample's activations, from `model` with its shapes inferred
// (InferSampleShapes; zeros when that failed): `total`, every activation's
// bytes; `live`, the most bytes alive at once when the nodes run in order
// (each tensor from its producer to its last reader, graph inputs from the
// start, graph outputs to the end), or `total` where the report cannot run
// the float and fake-quant models as one. Tensors whose shape stays unknown
// count as the sample's largest input. Saturates at 2^50 (a bound above any
// budget is as good as the exact figure).
//
// `sensitivity_kept`: what mixed precision's float cache keeps of a sample
// when it searches the kernels' bits (sensitivity.h: every cone's inputs
// and the compared tensors inside some cone), with every Conv,
// ConvTranspose, Gemm and MatMul of a constant weight searched and MCT's
// interest points found on this (imported) graph: the outputs of Add,
// Concat, Sigmoid, Softmax and of kernels not fused with an activation
// (through a BatchNormalization, which preparation folds), and the graph's
// outputs. Cones cut at `sensitivity_depth` interest points as the search
// cuts them (SensitivityOptions::depth; 0: whole cones).
// `sensitivity_cone`: the most bytes the nodes of one such cone make.
//
// `prepared`: `total` less the tensors preparation folds away (a kernel's
// output into its BatchNormalization, a swish's inner tensors): what the
// prepared float model's outputs add up to, which calibration keeps for
// the report and the mixed-precision search's runs make.
//
// `histogrammed`: how many tensors calibration keeps a histogram of for
// every sample until it merges them (statistics.h): the float graph inputs
// and the prepared graph's float activations but the kernels' outputs an
// activation fuses with.
//
// `shift_negative`: what shift-negative correction would add to that cache
// (its shifted and padded copies) wherever it may apply: its statistics
// decide where it does. `shift_negative_constant_add`: the same for its
// Adds of a constant (shift_negative_constant_add), which add only the Pad.
struct ActivationSizes {
  int64_t total = 0, live = 0, sensitivity_kept = 0, prepared = 0;
  int64_t histogrammed = 0, shift_negative = 0, sensitivity_cone = 0;
  int64_t shift_negative_constant_add = 0;
};

ActivationSizes ActivationBytesPerSample(const Model& model,
                                         bool shapes_inferred,
                                         const InputShapes& input_shapes,
                                         int sensitivity_depth = 0);
ActivationSizes ActivationBytesPerSample(
    const Model& model, bool shapes_inferred,
    const std::vector<SampleFeeds>& calibration, int sensitivity_depth = 0);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_JOB_ACTIVATION_SIZES_H_
