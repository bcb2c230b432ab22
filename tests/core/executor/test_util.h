// Hand-built single-node and small models for executor tests.
#ifndef QUANTD_TESTS_CORE_EXECUTOR_TEST_UTIL_H_
#define QUANTD_TESTS_CORE_EXECUTOR_TEST_UTIL_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/executor/executor.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"
#include "gtest/gtest.h"

namespace quantd::testing {

inline Attribute Ints(std::vector<int64_t> v) {
  Attribute a;
  a.type = Attribute::Type::kInts;
  a.ints = std::move(v);
  return a;
}
inline Attribute Int(int64_t v) {
  Attribute a;
  a.type = Attribute::Type::kInt;
  a.i = v;
  return a;
}
inline Attribute Float(float v) {
  Attribute a;
  a.type = Attribute::Type::kFloat;
  a.f = v;
  return a;
}
inline Attribute String(std::string v) {
  Attribute a;
  a.type = Attribute::Type::kString;
  a.s = std::move(v);
  return a;
}

inline Tensor F(std::vector<float> v, std::vector<int64_t> shape) {
  return Tensor::FromVector<float>(v, std::move(shape));
}
inline Tensor I64(std::vector<int64_t> v, std::vector<int64_t> shape) {
  return Tensor::FromVector<int64_t>(v, std::move(shape));
}

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17) { model_.opset_import[""] = opset; }
  ModelBuilder& Input(const std::string& name, DType dtype = DType::kFloat) {
    ValueInfo v;
    v.name = name;
    v.dtype = dtype;
    model_.graph.inputs.push_back(v);
    return *this;
  }
  ModelBuilder& Initializer(const std::string& name, Tensor t) {
    model_.graph.initializers[name] = std::move(t);
    return *this;
  }
  ModelBuilder& Output(const std::string& name) {
    ValueInfo v;
    v.name = name;
    model_.graph.outputs.push_back(v);
    return *this;
  }
  ModelBuilder& Add(const std::string& op, std::vector<std::string> inputs,
                    std::vector<std::string> outputs,
                    std::map<std::string, Attribute> attrs = {}) {
    Node n;
    n.name = absl::StrCat(op, "_", model_.graph.nodes.size());
    n.op_type = op;
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    n.attributes = std::move(attrs);
    model_.graph.nodes.push_back(std::move(n));
    return *this;
  }
  Model Build() const { return model_; }

 private:
  Model model_;
};

// Runs a single op on float inputs "x0", "x1"... (absent when the tensor is
// undefined) and returns output 0, or the error.
inline absl::StatusOr<Tensor> RunOp(const std::string& op,
                                    std::vector<Tensor> inputs,
                                    std::map<std::string, Attribute> attrs,
                                    int64_t opset = 17,
                                    ThreadPool* pool = nullptr) {
  ModelBuilder b(opset);
  std::vector<std::string> names;
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      names.push_back("");
      continue;
    }
    const std::string name = absl::StrCat("x", i);
    b.Input(name, inputs[i].dtype());
    feeds[name] = inputs[i];
    names.push_back(name);
  }
  b.Add(op, names, {"y"}, std::move(attrs)).Output("y");
  ExecutorOptions options;
  options.pool = pool;
  absl::StatusOr<std::unique_ptr<Executor>> e =
      Executor::Create(b.Build(), options);
  if (!e.ok()) return e.status();
  absl::StatusOr<std::map<std::string, Tensor>> out = (*e)->Run(feeds);
  if (!out.ok()) return out.status();
  return out->at("y");
}

inline std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data<float>(),
                            t.data<float>() + t.num_elements());
}

}  // namespace quantd::testing

#endif  // QUANTD_TESTS_CORE_EXECUTOR_TEST_UTIL_H_
