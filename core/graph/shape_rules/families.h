// Each ONNX operator family's shape rules, one file per family as in ONNX's
// onnx/defs/ folders; registry.cc collects them into the table behind
// FindShapeRule. Internal to core/graph.
#ifndef QUANTD_CORE_GRAPH_SHAPE_RULES_FAMILIES_H_
#define QUANTD_CORE_GRAPH_SHAPE_RULES_FAMILIES_H_

#include "core/graph/shape_rules/helpers.h"

namespace quantd {
namespace shape_internal {

void AddMathRules(RuleTable* m);             // math.cc
void AddLogicalRules(RuleTable* m);          // logical.cc
void AddNnRules(RuleTable* m);               // nn.cc
void AddTensorRules(RuleTable* m);           // tensor.cc
void AddTensorReshapeRules(RuleTable* m);    // tensor_reshape.cc
void AddReductionRules(RuleTable* m);        // reduction.cc
void AddRnnRules(RuleTable* m);              // rnn.cc
void AddQuantizationRules(RuleTable* m);     // quantization.cc
void AddGeneratorRules(RuleTable* m);        // generator.cc
void AddControlFlowRules(RuleTable* m);      // controlflow.cc
void AddObjectDetectionRules(RuleTable* m);  // object_detection.cc

}  // namespace shape_internal
}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_SHAPE_RULES_FAMILIES_H_
