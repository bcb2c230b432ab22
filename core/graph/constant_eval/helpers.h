// Element access, errors and indexing shared by the constant evaluator's
// families (constant_eval/*.cc). Internal to core/graph.
#ifndef QUANTD_CORE_GRAPH_CONSTANT_EVAL_HELPERS_H_
#define QUANTD_CORE_GRAPH_CONSTANT_EVAL_HELPERS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"

namespace quantd {
namespace constant_eval_internal {

using Shape = std::vector<int64_t>;

bool IsFloating(DType t);
bool IsNumeric(DType t);

// Reads element i of a numeric tensor as T.
template <typename T>
T Get(const Tensor& t, int64_t i) {
  const void* p = t.raw();
  switch (t.dtype()) {
    case DType::kFloat:
      return static_cast<T>(static_cast<const float*>(p)[i]);
    case DType::kDouble:
      return static_cast<T>(static_cast<const double*>(p)[i]);
    case DType::kInt8:
      return static_cast<T>(static_cast<const int8_t*>(p)[i]);
    case DType::kUint8:
    case DType::kBool:
      return static_cast<T>(static_cast<const uint8_t*>(p)[i]);
    case DType::kInt16:
      return static_cast<T>(static_cast<const int16_t*>(p)[i]);
    case DType::kUint16:
      return static_cast<T>(static_cast<const uint16_t*>(p)[i]);
    case DType::kInt32:
      return static_cast<T>(static_cast<const int32_t*>(p)[i]);
    case DType::kUint32:
      return static_cast<T>(static_cast<const uint32_t*>(p)[i]);
    case DType::kInt64:
      return static_cast<T>(static_cast<const int64_t*>(p)[i]);
    case DType::kUint64:
      return static_cast<T>(static_cast<const uint64_t*>(p)[i]);
    default:
      return T{};
  }
}

// Float -> integer conversion that never invokes UB (NaN/overflow saturate).
int64_t SafeToInt64(double v);

// Writes element i of a numeric tensor from an int64 or double value.
void SetInt(Tensor* t, int64_t i, int64_t v);
void SetDouble(Tensor* t, int64_t i, double v);

// An InvalidArgument error naming the node.
absl::Status NodeError(const Node& node, const std::string& what);
// A tensor of that shape, or RESOURCE_EXHAUSTED past max_elements.
absl::StatusOr<Tensor> NewTensor(const Node& node, DType dtype, Shape shape,
                                 int64_t max_elements);
// A possibly negative axis normalized to [0, rank), or an error.
absl::StatusOr<int64_t> NormalizeAxis(const Node& node, int64_t axis,
                                      int64_t rank);
// Row-major element strides of a shape.
std::vector<int64_t> Strides(const Shape& shape);

// Maps each output index to the flat index of a broadcast input.
class BroadcastMap {
 public:
  BroadcastMap(const Shape& out, const Shape& in) : out_(out) {
    const size_t r = out.size();
    strides_.assign(r, 0);
    const std::vector<int64_t> in_strides = Strides(in);
    const size_t off = r - in.size();
    for (size_t i = 0; i < in.size(); ++i) {
      strides_[off + i] = in[i] == 1 ? 0 : in_strides[i];
    }
  }
  int64_t Map(int64_t flat) const {
    int64_t idx = 0;
    for (int i = static_cast<int>(out_.size()) - 1; i >= 0; --i) {
      const int64_t d = out_[i];
      if (d == 0) return 0;
      idx += (flat % d) * strides_[i];
      flat /= d;
    }
    return idx;
  }

 private:
  Shape out_;
  std::vector<int64_t> strides_;
};

// The axes of Squeeze/Unsqueeze/Reduce*: constant input input_index (none
// when absent) when from_input, else the "axes" attribute.
absl::StatusOr<std::vector<int64_t>> AxesFrom(
    const Node& node, absl::Span<const Tensor* const> in, size_t input_index,
    bool from_input);

// input(k): the node's input k, or nullptr past the inputs given.
struct InputAt {
  absl::Span<const Tensor* const> inputs;
  const Tensor* operator()(size_t k) const {
    return k < inputs.size() ? inputs[k] : nullptr;
  }
};

}  // namespace constant_eval_internal
}  // namespace quantd

#endif  // QUANTD_CORE_GRAPH_CONSTANT_EVAL_HELPERS_H_
