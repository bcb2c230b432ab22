// MCT's LayerFilterParams and AttributeFilter (Eq, NotEq, Greater, GreaterEq,
// Smaller, SmallerEq, Contains, and their & / | combinations) over ONNX nodes
// (OpView). A condition on an attribute the node lacks does not match, as in
// MCT. Numbers compare as doubles; a list equals a list elementwise;
// Contains tests list membership or substring.
//
//   LayerFilter dw = Filter("Conv", {And({Eq("group", Ref("in_channels")),
//                                        Greater("group", 1)})});
#ifndef QUANTD_CORE_TPC_LAYER_FILTER_H_
#define QUANTD_CORE_TPC_LAYER_FILTER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/tpc/op_view.h"
#include "quantd/v1/tpc.pb.h"

namespace quantd::tpc {

bool Matches(const quantd::v1::AttributeFilter& filter, const OpView& op);
// op_type equal and every condition matches.
bool Matches(const quantd::v1::LayerFilter& filter, const OpView& op);

// Structural checks for request-supplied filters (op set, attr, value, and
// children present as the op needs); errors name `path`.
absl::Status ValidateLayerFilter(const quantd::v1::LayerFilter& filter,
                                 const std::string& path);

// Human-readable form: Conv[group == $in_channels && group > 1].
std::string ToString(const quantd::v1::LayerFilter& filter);

// Builders.
struct FilterValue {
  quantd::v1::AttributeFilter value;  // only the `value` oneof is set
};
FilterValue Int(int64_t v);
FilterValue Float(double v);
FilterValue Str(const std::string& v);
FilterValue Ints(const std::vector<int64_t>& v);
// Another (pseudo) attribute of the same node.
FilterValue Ref(const std::string& attr);

quantd::v1::AttributeFilter Eq(const std::string& attr, FilterValue v);
quantd::v1::AttributeFilter NotEq(const std::string& attr, FilterValue v);
quantd::v1::AttributeFilter Greater(const std::string& attr, FilterValue v);
quantd::v1::AttributeFilter GreaterEq(const std::string& attr, FilterValue v);
quantd::v1::AttributeFilter Smaller(const std::string& attr, FilterValue v);
quantd::v1::AttributeFilter SmallerEq(const std::string& attr, FilterValue v);
quantd::v1::AttributeFilter Contains(const std::string& attr, FilterValue v);
quantd::v1::AttributeFilter And(std::vector<quantd::v1::AttributeFilter> c);
quantd::v1::AttributeFilter Or(std::vector<quantd::v1::AttributeFilter> c);

quantd::v1::LayerFilter Filter(
    const std::string& op_type,
    std::vector<quantd::v1::AttributeFilter> conditions = {});

}  // namespace quantd::tpc

#endif  // QUANTD_CORE_TPC_LAYER_FILTER_H_
