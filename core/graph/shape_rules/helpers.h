// Helpers shared by the shape rules of every operator family, and the generic
// rules several families register (element-wise, broadcasting, axes). Internal
// to core/graph: included only by core/graph/shape_rules/*.cc.
#ifndef QUANTD_CORE_GRAPH_SHAPE_RULES_HELPERS_H_
#define QUANTD_CORE_GRAPH_SHAPE_RULES_HELPERS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/graph/internal/shape_rules.h"
#include "core/graph/tensor.h"

namespace quantd {
namespace shape_internal {

using Shape = std::vector<int64_t>;

// The registry: op type -> rule. Each family adds its ops (families.h).
using RuleTable = std::map<std::string, ShapeRule>;

// An InvalidArgument error naming the node.
absl::Status Error(const RuleContext& c, const std::string& what);
// Error naming the node when an output of `rank` dims is above c.max_rank.
absl::Status CheckRank(const RuleContext& c, int64_t rank);
// "[d0,d1,...]".
std::string Str(const Shape& s);

// Input k's type (nullptr when absent or unknown), whether its rank is known,
// its dtype (kUndefined when unknown), its constant value (nullptr when not
// known), and whether the node names it at all.
const ValueInfo* In(const RuleContext& c, size_t k);
bool HasRank(const RuleContext& c, size_t k);
DType TypeOf(const RuleContext& c, size_t k);
const Tensor* Const(const RuleContext& c, size_t k);
bool Present(const RuleContext& c, size_t k);

// Output i gets a type and shape, or only a type (rank unknown).
void Set(RuleContext* c, size_t i, DType dtype, Shape shape);
void SetType(RuleContext* c, size_t i, DType dtype);
// Output i gets input k's type and shape (or only its type).
void Same(RuleContext* c, size_t i, size_t k, DType dtype);

// A possibly negative axis normalized to [0, rank), or an error.
absl::StatusOr<int64_t> Axis(const RuleContext& c, int64_t axis, int64_t rank);
// Input k's constant value as int64s; NotFound when it is not constant.
absl::StatusOr<std::vector<int64_t>> ConstInts(const RuleContext& c, size_t k);

// Dims and attributes come from untrusted models: arithmetic on them runs in
// 128 bits and results must stay below kMaxDim (2^40, far above any real
// tensor), so no int64 overflow can happen.
using i128 = __int128;
constexpr int64_t kMaxDim = int64_t{1} << 40;

// v as a dimension, or an error when negative or above kMaxDim.
absl::StatusOr<int64_t> Dim(const RuleContext& c, i128 v);

// Ceil/floor division for the possibly-negative numerators of conv math.
i128 FloorDiv(i128 a, i128 b);
i128 CeilDiv(i128 a, i128 b);

// Output 0 has input 0's type and shape.
absl::Status UnaryRule(RuleContext* c);
// Output 0 is the broadcast of inputs [first, last) with the given type;
// check_types requires the present inputs' types to agree.
absl::Status BroadcastAll(RuleContext* c, size_t first, size_t last,
                          DType dtype, bool check_types);
// The broadcast of all inputs, with input 0's type (which all must share).
absl::Status ArithmeticRule(RuleContext* c);
// The axes of Squeeze/Unsqueeze/Reduce*: from the "axes" attribute, or from
// constant input input_index when from_input; nullopt when not given, and
// NotFound when the input is not constant.
absl::StatusOr<std::optional<std::vector<int64_t>>> AxesOf(const RuleContext& c,
                                                           size_t input_index,
                                                           bool from_input);

}  // namespace shape_internal
}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_SHAPE_RULES_HELPERS_H_
