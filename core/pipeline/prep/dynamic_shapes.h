// Dynamic and symbolic dimensions through a job.
//
// A job binds the graph inputs to the samples' shapes (calibration runs one
// shape), yet the QDQ model must take what the float model took: any batch
// where the input says [N,3,H,W]. Two pieces keep that true:
//   - constant folding is told the same shapes with every dynamic dimension
//     at another size (ProbeShapes), so shape computations that depend on a
//     dynamic dimension stay in the graph (transforms.h,
//     ConstantFoldingOptions::probe_input_shapes);
//   - the exported model gets the float model's declared inputs and outputs
//     back (RestoreDeclaredShapes), checked by inferring it at the probe
//     shapes.
#ifndef QUANTD_CORE_PIPELINE_PREP_DYNAMIC_SHAPES_H_
#define QUANTD_CORE_PIPELINE_PREP_DYNAMIC_SHAPES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/graph/graph.h"

namespace quantd {

using InputShapes = std::map<std::string, std::vector<int64_t>>;

// `bound` with every dimension that `declared` leaves dynamic (negative,
// symbolic, or an input without a shape) doubled (0 becomes 1). Empty when
// no bound dimension is dynamic.
InputShapes ProbeShapes(const std::vector<ValueInfo>& declared,
                        const InputShapes& bound);

// Puts the declared dynamic dimensions (dim_param names or unknown) of the
// graph inputs and outputs back into `model`, whose inputs were bound to the
// samples' shapes, and drops the inferred value_info (ONNX Runtime infers it
// again). Static dims of the declaration stay as they are. If the result
// does not infer at the probe shapes (a transform needed a static shape),
// `model` keeps the bound shapes and a warning says which input dimensions
// stay fixed and why; unless `float_model` (the model as imported, if given)
// fails that probe too: then the dims are dynamic only in name (e.g. If
// branches that each take one input length), the declaration goes back
// all the same, and a warning says so. Subgraph (If/Loop/Scan body)
// value_info and body input/output shapes are dropped either way: they hold
// the samples' shapes, which ONNX Runtime would type-check every branch at.
void RestoreDeclaredShapes(const std::vector<ValueInfo>& declared_inputs,
                           const std::vector<ValueInfo>& declared_outputs,
                           Model* model, std::vector<std::string>* warnings,
                           const Model* float_model = nullptr);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_PREP_DYNAMIC_SHAPES_H_
