// Reverse-mode gradients over the graph IR.
//
// Create() decides which tensors carry a gradient (those depending on a
// graph input, unless input_gradients is off, or on one of the requested
// initializers) and checks that every node on that path has a backward pass:
// an op without one is UNIMPLEMENTED naming the node. Forward() runs quantd's
// executor (its kernels, its threading) and keeps the values the backward
// passes read; Backward() takes d(loss)/d(t) for any float tensors t of that
// path (graph outputs or intermediates) and returns d(loss)/d(graph inputs)
// and d(loss)/d(requested initializers). Both are const and may run
// concurrently.
//
//   GradientOptions o;  o.initializers = {"conv1.weight"};
//   ASSIGN_OR_RETURN(auto grad, GradientGraph::Create(model, o));
//   ASSIGN_OR_RETURN(Tape tape, grad->Forward({{"input", x}}));
//   ASSIGN_OR_RETURN(Gradients g, grad->Backward(tape, {{"logits", dy}}));
//   g.initializers["conv1.weight"] ...
//
// Differentiable ops: DifferentiableOps() (Conv incl. grouped / depthwise,
// BatchNormalization, activations, pooling, Add/Sub/Mul/Div, Concat, Gemm,
// MatMul, Softmax, reshapes, Transpose, Slice, Pad, Resize,
// ConvTranspose's input). Gradients are float tensors; the
// backward passes accumulate in double where core/train does (Conv).
#ifndef QUANTD_CORE_AUTODIFF_GRADIENT_GRAPH_H_
#define QUANTD_CORE_AUTODIFF_GRADIENT_GRAPH_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/autodiff/scratch.h"
#include "core/executor/executor.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"
#include "core/runtime/cancellation.h"

namespace quantd::autodiff {

struct GradientOptions {
  // Initializers to differentiate with respect to, besides the graph inputs.
  std::vector<std::string> initializers;
  // False: only the initializers carry gradients (the Hessian scores); the
  // nodes between the graph inputs and the first initializer then have no
  // backward pass and Gradients::inputs stays empty.
  bool input_gradients = true;
  // Tensors of the gradient path whose gradients Backward() also returns
  // (Gradients::tensors; zeros where the loss does not reach them).
  std::vector<std::string> tensor_gradients;
  ExecutorOptions executor;
};

// The forward values one Backward() reads (graph inputs, the inputs and
// outputs of every node on the gradient path, the graph outputs).
struct Tape {
  std::map<std::string, Tensor> values;
};

struct Gradients {
  std::map<std::string, Tensor> inputs;        // every graph input (if asked)
  std::map<std::string, Tensor> initializers;  // the requested ones
  std::map<std::string, Tensor> tensors;  // GradientOptions::tensor_gradients
};

// Receives a tensor's gradient once it is complete (every consumer has
// added its part): GradientOptions::tensor_gradients, zeros for a tensor the
// loss does not reach.
using GradientObserver =
    std::function<void(const std::string& tensor, const Tensor& gradient)>;

class GradientGraph {
 public:
  static absl::StatusOr<std::unique_ptr<GradientGraph>> Create(
      std::shared_ptr<const Model> model, const GradientOptions& options = {});

  // What Create checks (every node on the path has a backward pass, the
  // initializers exist and are float) without building the executor.
  static absl::Status CheckPath(const Model& model,
                                const GradientOptions& options = {});

  absl::StatusOr<Tape> Forward(const std::map<std::string, Tensor>& feeds,
                               const CancellationToken* cancel = nullptr) const;

  // seeds: tensor name -> d(loss)/d(tensor), float, the tensor's shape. A
  // name off the gradient path or absent from the tape is INVALID_ARGUMENT.
  // `scratch` (optional, one per concurrent call) keeps the kernels'
  // temporaries for the caller's next pass (scratch.h).
  // With `observer`, the tensor gradients go to it as they complete instead
  // of into Gradients::tensors, and each intermediate gradient is freed once
  // its producer's backward has read it: the pass then holds the gradients
  // of the tensors still live, not of the whole graph.
  absl::StatusOr<Gradients> Backward(
      const Tape& tape, const std::map<std::string, Tensor>& seeds,
      const CancellationToken* cancel = nullptr, Scratch* scratch = nullptr,
      const GradientObserver* observer = nullptr) const;

  // True if `tensor` depends on a graph input or a requested initializer.
  bool IsDifferentiable(const std::string& tensor) const {
    return differentiable_.count(tensor) > 0;
  }
  const Model& model() const { return *model_; }
  const Executor& executor() const { return *executor_; }

 private:
  GradientGraph() = default;
  // The path and what the tape keeps (all but the model and executor).
  absl::Status Plan(const Graph& g, const GradientOptions& options);

  std::shared_ptr<const Model> model_;
  std::unique_ptr<Executor> executor_;
  std::vector<std::string> wrt_initializers_;
  std::vector<std::string> tensor_gradients_;
  bool input_gradients_ = true;
  std::set<std::string> differentiable_;
  std::vector<int> backward_nodes_;         // indices, topological order
  std::vector<std::string> extra_outputs_;  // what the tape keeps
};

}  // namespace quantd::autodiff

#endif  // QUANTD_CORE_AUTODIFF_GRADIENT_GRAPH_H_
