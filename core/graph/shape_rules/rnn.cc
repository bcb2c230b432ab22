// Shape rules of ONNX recurrent ops (onnx/defs/rnn): LSTM, GRU, RNN.
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/graph/shape_rules/families.h"
#include "core/graph/shape_rules/helpers.h"

namespace quantd {
namespace shape_internal {
namespace {

absl::Status RecurrentRule(RuleContext* c) {
  const DType dtype = TypeOf(*c, 0);
  const int64_t hidden = c->node->GetInt("hidden_size", -1);
  const std::string dir = c->node->GetString("direction", "forward");
  const int64_t dirs = dir == "bidirectional" ? 2 : 1;
  const bool batch_first = c->node->GetInt("layout", 0) != 0;
  if (!HasRank(*c, 0)) {
    for (size_t i = 0; i < c->outputs.size(); ++i) SetType(c, i, dtype);
    return absl::OkStatus();
  }
  const Shape& x = In(*c, 0)->shape;
  if (x.size() != 3) return Error(*c, "X must be 3-D");
  const int64_t seq = batch_first ? x[1] : x[0];
  const int64_t batch = batch_first ? x[0] : x[1];
  Set(c, 0, dtype,
      batch_first ? Shape{batch, seq, dirs, hidden}
                  : Shape{seq, dirs, batch, hidden});
  const Shape state =
      batch_first ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden};
  for (size_t i = 1; i < c->outputs.size(); ++i) Set(c, i, dtype, state);
  return absl::OkStatus();
}

}  // namespace

void AddRnnRules(RuleTable* m) {
  for (const char* op : {"LSTM", "GRU", "RNN"}) (*m)[op] = RecurrentRule;
}

}  // namespace shape_internal
}  // namespace quantd
