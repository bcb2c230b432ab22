// MCT's shift-negative correction.
#ifndef QUANTD_CORE_PIPELINE_CORRECTIONS_SHIFT_NEGATIVE_H_
#define QUANTD_CORE_PIPELINE_CORRECTIONS_SHIFT_NEGATIVE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/graph/graph.h"
#include "core/pipeline/job/job_state.h"
#include "core/runtime/cancellation.h"

namespace quantd {

// The activations the correction considers besides a swish (x * sigmoid(x)
// or its hard form, the "Swish" op set's Mul).
bool IsShiftNegativeOp(const std::string& op_type);
// The ops it looks through from an activation to the linear node after it.
bool IsShiftNegativeBypass(const std::string& op_type);
// The operand of an Add of one float32 initializer and a computed tensor
// (the constant shift_negative_constant_add adds the shift to), or -1.
int ConstantAddOperand(const Graph& g, const Node& n);
// The tensors it inserts before `linear`, the Conv or Gemm (of a constant
// weight) that reads a corrected activation: the Add, and a Pad before a
// Conv that pads; 0 where it cannot correct (a Conv padding by auto_pad, a
// Gemm whose bias cannot absorb the shift, any other op).
int ShiftNegativeInsertedTensors(const Node& linear);

// shift_negative.cc: MCT's shift-negative correction after parameter
// selection and before mixed precision, where MCT 2.3 runs it
// (quantization_preparation_runner): inserts an Add after each corrected
// activation; the next linear node's bias absorbs the shift. The Add takes
// the activation's candidates (its op set's configurations, the selected one
// first) with the corrected threshold kept for every one of them
// (NodePlan::fixed_threshold), so mixed precision searches its bits; the
// activation itself is pinned at 16 bits in every candidate, as MCT does.
// `shapes` (the calibration's tensor shapes, may be null) gets the shape of
// each Add's output, which the resource figures price (not the Pad's: MCT
// does not quantize it). Cases it cannot
// handle (a padded Conv after the activation, several consumers, ...) are
// left as they are and listed in state->warnings. With
// shift_negative_constant_add, an Add of a constant is corrected in place:
// its constant takes the shift, its statistics move by it and its
// parameters are selected again (no node but the Pad; cases it cannot
// handle stay as they are, silently). A cancelled `cancel` stops
// the search between candidates and grid points and returns its status (the
// job then discards the state).
absl::Status ApplyShiftNegativeCorrection(
    JobState* state,
    std::map<std::string, std::vector<int64_t>>* shapes = nullptr,
    const CancellationToken* cancel = nullptr);

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_CORRECTIONS_SHIFT_NEGATIVE_H_
