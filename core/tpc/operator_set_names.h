// MCT's OperatorSetNames vocabulary, spelled as MCT spells it (including its
// "Expend" for Expand). Operator set names outside it are custom names, which
// MCT allows; a framework mapping must then be supplied for them.
#ifndef QUANTD_CORE_TPC_OPERATOR_SET_NAMES_H_
#define QUANTD_CORE_TPC_OPERATOR_SET_NAMES_H_

#include <array>
#include <string_view>

namespace quantd::tpc {

// Schema v1 names, in MCT's declaration order.
inline constexpr std::array<std::string_view, 57> kOperatorSetNamesV1 = {
    "Conv",
    "DepthwiseConv2D",
    "ConvTranspose",
    "FullyConnected",
    "Concatenate",
    "Stack",
    "Unstack",
    "Gather",
    "Expend",
    "BatchNorm",
    "L2Norm",
    "ReLU",
    "ReLU6",
    "LeakyReLU",
    "Elu",
    "HardTanh",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Min",
    "Max",
    "PReLU",
    "AddBias",
    "Swish",
    "Sigmoid",
    "Softmax",
    "LogSoftmax",
    "Tanh",
    "Gelu",
    "HardSigmoid",
    "HardSwish",
    "Flatten",
    "GetItem",
    "Reshape",
    "Unsqueeze",
    "Squeeze",
    "Permute",
    "Transpose",
    "Dropout",
    "SplitChunk",
    "MaxPool",
    "AvgPool",
    "Size",
    "Shape",
    "Equal",
    "ArgMax",
    "TopK",
    "FakeQuant",
    "CombinedNonMaxSuppression",
    "ZeroPadding2D",
    "Cast",
    "Resize",
    "Pad",
    "Fold",
    "StridedSlice",
    "SSDPostProcess",
};

// Names schema v2 adds.
inline constexpr std::array<std::string_view, 3> kOperatorSetNamesV2Additions =
    {
        "Exp",
        "Sin",
        "Cos",
};

// True when `name` is in MCT's vocabulary for `schema_version` (1 or 2).
bool IsStandardOperatorSetName(std::string_view name, int schema_version = 2);

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_OPERATOR_SET_NAMES_H_
