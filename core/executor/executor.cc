#include "core/executor/executor.h"

#include <algorithm>
#include <array>
#include <set>
#include <unordered_map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/executor/subgraph.h"
#include "core/graph/free_names.h"
#include "core/graph/mctq_ops.h"
#include "core/graph/validation.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

// Kahn's algorithm over the nodes' reads, keeping the given order among
// ready nodes; fails on a node that reads its own output or sits in a
// cycle.
absl::StatusOr<std::vector<int>> TopologicalOrder(
    const Graph& g, const std::unordered_map<std::string, int>& producer,
    const std::set<std::string>& sources,
    const std::vector<std::vector<std::string>>& reads) {
  std::vector<int> pending(g.nodes.size(), 0);
  std::vector<std::vector<int>> consumers(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::set<int> deps;
    for (const std::string& name : reads[i]) {
      auto it = producer.find(name);
      if (it != producer.end() && !sources.count(name)) deps.insert(it->second);
    }
    for (int d : deps) {
      if (d == static_cast<int>(i)) {
        return absl::InvalidArgumentError(
            absl::StrCat(g.nodes[i].Label(), ": reads its own output"));
      }
      consumers[d].push_back(static_cast<int>(i));
    }
    pending[i] = static_cast<int>(deps.size());
  }
  std::set<int> ready;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (pending[i] == 0) ready.insert(static_cast<int>(i));
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int c : consumers[i]) {
      if (--pending[c] == 0) ready.insert(c);
    }
  }
  if (order.size() != g.nodes.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (pending[i] > 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(g.nodes[i].Label(), ": is part of a cycle"));
      }
    }
  }
  return order;
}

}  // namespace

class Executor::Impl {
 public:
  struct Step {
    const Node* node = nullptr;
    std::unique_ptr<exec::Kernel> kernel;
    std::vector<int> inputs;   // -1: absent
    std::vector<int> outputs;  // -1: unnamed optional output
    std::vector<std::pair<std::string, int>> implicit;  // outer-scope reads
    std::vector<int> release;  // slots whose last reader is this step
    // Input positions (< KernelContext::kMaxDonated) whose slot this step
    // releases and reads only there: the kernel may overwrite them in place
    // when no one else holds the buffer at run time.
    std::vector<int> donatable;
  };

  static absl::StatusOr<std::unique_ptr<Impl>> Create(
      std::shared_ptr<const Model> model, const Graph* graph, int64_t opset,
      const ExecutorOptions& options,
      const std::vector<std::string>& outer_scope) {
    auto impl = std::make_unique<Impl>();
    impl->model_ = std::move(model);
    impl->graph_ = graph;
    impl->options_ = options;
    RETURN_IF_ERROR(impl->Prepare(opset, outer_scope));
    return impl;
  }

  absl::StatusOr<std::map<std::string, Tensor>> Run(
      const std::map<std::string, Tensor>& feeds, const RunOptions& options,
      RunStats* stats) const;

  const Model& model() const { return *model_; }
  const ExecutorOptions& options() const { return options_; }

  static std::unique_ptr<Executor> Wrap(std::unique_ptr<Impl> impl) {
    return std::unique_ptr<Executor>(new Executor(std::move(impl)));
  }

 private:
  int SlotOf(const std::string& name) {
    auto [it, inserted] = slots_.emplace(name, static_cast<int>(names_.size()));
    if (inserted) names_.push_back(name);
    return it->second;
  }

  absl::Status Prepare(int64_t opset,
                       const std::vector<std::string>& outer_scope);
  // The steps of the nodes in `order`, each with its kernel and slots.
  absl::Status CreateSteps(
      int64_t opset, const std::vector<std::string>& outer_scope,
      const std::vector<int>& order,
      const std::vector<std::vector<std::string>>& implicit);
  // Releases each slot after its last reader (or its producer if unread).
  void PlanReleases();
  // Fills step->donatable from its releases.
  static void PlanDonations(Step* step);

  std::shared_ptr<const Model> model_;
  const Graph* graph_ = nullptr;
  ExecutorOptions options_;
  std::unordered_map<std::string, int> slots_;
  std::vector<std::string> names_;
  std::vector<std::pair<int, const Tensor*>> constants_;
  std::vector<std::pair<const ValueInfo*, int>> inputs_;
  std::vector<std::pair<std::string, int>> outer_inputs_;
  std::vector<std::pair<std::string, int>> outputs_;
  std::vector<Step> steps_;
  std::vector<char> is_constant_;
};

absl::Status Executor::Impl::Prepare(
    int64_t opset, const std::vector<std::string>& outer_scope) {
  const Graph& g = *graph_;
  std::set<std::string> outer(outer_scope.begin(), outer_scope.end());
  // Producers: graph inputs, initializers, outer scope, node outputs.
  std::unordered_map<std::string, int> producer;  // name -> node index
  std::set<std::string> sources;
  for (const auto& [name, t] : g.initializers) sources.insert(name);
  for (const ValueInfo& v : g.inputs) {
    if (g.initializers.count(v.name)) continue;
    if (!sources.insert(v.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph input '", v.name, "' is declared twice"));
    }
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& o : g.nodes[i].outputs) {
      if (o.empty()) continue;
      if (sources.count(o) || !producer.emplace(o, i).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(g.nodes[i].Label(), ": output '", o,
                         "' is already produced elsewhere"));
      }
    }
  }
  // Every name a node reads, including those of its branches.
  std::vector<std::vector<std::string>> reads(g.nodes.size());
  std::vector<std::vector<std::string>> implicit(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    implicit[i] = ImplicitInputs(n);
    reads[i] = n.inputs;
    reads[i].insert(reads[i].end(), implicit[i].begin(), implicit[i].end());
    for (const std::string& name : reads[i]) {
      if (name.empty() || sources.count(name) || producer.count(name) ||
          outer.count(name)) {
        continue;
      }
      return absl::InvalidArgumentError(
          absl::StrCat(n.Label(), ": input '", name,
                       "' is not produced by any node, initializer or graph "
                       "input"));
    }
  }
  ASSIGN_OR_RETURN(const std::vector<int> order,
                   TopologicalOrder(g, producer, sources, reads));

  // Slots.
  for (const auto& [name, t] : g.initializers) {
    constants_.emplace_back(SlotOf(name), &t);
  }
  for (const ValueInfo& v : g.inputs) {
    if (g.initializers.count(v.name)) continue;
    inputs_.emplace_back(&v, SlotOf(v.name));
  }
  for (const std::string& name : outer) {
    if (!sources.count(name) && !producer.count(name)) {
      outer_inputs_.emplace_back(name, SlotOf(name));
    }
  }
  RETURN_IF_ERROR(CreateSteps(opset, outer_scope, order, implicit));
  for (const ValueInfo& v : g.outputs) {
    if (!sources.count(v.name) && !producer.count(v.name) &&
        !outer.count(v.name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph output '", v.name, "' is not produced by any node"));
    }
    outputs_.emplace_back(v.name, SlotOf(v.name));
  }

  PlanReleases();
  return absl::OkStatus();
}

absl::Status Executor::Impl::CreateSteps(
    int64_t opset, const std::vector<std::string>& outer_scope,
    const std::vector<int>& order,
    const std::vector<std::vector<std::string>>& implicit) {
  const Graph& g = *graph_;
  const exec::KernelRegistry& registry = exec::KernelRegistry::Get();
  for (int i : order) {
    const Node& n = g.nodes[i];
    const bool default_domain = IsDefaultDomain(n.domain);
    if (!default_domain && !IsMctqQuantizerOp(n.domain, n.op_type)) {
      return absl::UnimplementedError(
          absl::StrCat(n.Label(), ": operator ", n.op_type, " of domain '",
                       n.domain, "' is not supported by the executor"));
    }
    const exec::KernelFactory* factory = registry.Find(
        default_domain ? n.op_type : QualifiedOpType(n.domain, n.op_type));
    if (factory == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat(n.Label(), ": operator ", n.op_type,
                       " is not supported by the executor"));
    }
    std::vector<std::string> scope = outer_scope;
    if (!implicit[i].empty()) scope = implicit[i];
    exec::KernelInfo info{n, opset, g, options_, scope};
    ASSIGN_OR_RETURN(auto kernel, (*factory)(info));
    Step step;
    step.node = &n;
    step.kernel = std::move(kernel);
    for (const std::string& in : n.inputs) {
      step.inputs.push_back(in.empty() ? -1 : SlotOf(in));
    }
    for (const std::string& out : n.outputs) {
      step.outputs.push_back(out.empty() ? -1 : SlotOf(out));
    }
    for (const std::string& name : implicit[i]) {
      step.implicit.emplace_back(name, SlotOf(name));
    }
    steps_.push_back(std::move(step));
  }
  return absl::OkStatus();
}

void Executor::Impl::PlanReleases() {
  is_constant_.assign(names_.size(), 0);
  for (const auto& [slot, t] : constants_) is_constant_[slot] = 1;
  std::vector<int> last(names_.size(), -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    for (int o : steps_[s].outputs) {
      if (o >= 0) last[o] = static_cast<int>(s);
    }
  }
  for (size_t s = 0; s < steps_.size(); ++s) {
    for (int in : steps_[s].inputs) {
      if (in >= 0) last[in] = std::max(last[in], static_cast<int>(s));
    }
    for (const auto& [name, slot] : steps_[s].implicit) {
      last[slot] = std::max(last[slot], static_cast<int>(s));
    }
  }
  std::vector<char> is_output(names_.size(), 0);
  for (const auto& [name, slot] : outputs_) is_output[slot] = 1;
  for (size_t slot = 0; slot < names_.size(); ++slot) {
    if (is_constant_[slot] || is_output[slot] || last[slot] < 0) continue;
    steps_[last[slot]].release.push_back(static_cast<int>(slot));
  }
  for (Step& step : steps_) PlanDonations(&step);
}

void Executor::Impl::PlanDonations(Step* step) {
  const int n = std::min<int>(static_cast<int>(step->inputs.size()),
                              exec::KernelContext::kMaxDonated);
  for (int k = 0; k < n; ++k) {
    const int slot = step->inputs[k];
    if (slot < 0 || std::find(step->release.begin(), step->release.end(),
                              slot) == step->release.end()) {
      continue;
    }
    int reads = 0;
    for (int in : step->inputs) reads += in == slot;
    for (const auto& [name, s] : step->implicit) reads += s == slot;
    if (reads == 1) step->donatable.push_back(k);
  }
}

absl::StatusOr<std::map<std::string, Tensor>> Executor::Impl::Run(
    const std::map<std::string, Tensor>& feeds, const RunOptions& options,
    RunStats* stats) const {
  std::vector<Tensor> values(names_.size());
  for (const auto& [slot, t] : constants_) values[slot] = *t;
  int64_t live = 0;
  int64_t peak = 0;
  int64_t in_place = 0;
  size_t matched = 0;
  for (const auto& [info, slot] : inputs_) {
    auto it = feeds.find(info->name);
    if (it == feeds.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph input '", info->name, "' has no feed"));
    }
    const Tensor& t = it->second;
    if (info->dtype != DType::kUndefined && t.dtype() != info->dtype) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph input '", info->name, "': expected ",
                       DTypeName(info->dtype), ", got ", t.DebugString()));
    }
    if (!t.defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph input '", info->name, "': feed is undefined"));
    }
    if (info->has_shape) {
      bool ok = static_cast<size_t>(t.rank()) == info->shape.size();
      for (size_t d = 0; ok && d < info->shape.size(); ++d) {
        ok = info->shape[d] < 0 || info->shape[d] == t.dim(d);
      }
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat(
            "graph input '", info->name, "': expected shape ",
            exec::ShapeString(info->shape), ", got ", t.DebugString()));
      }
    }
    values[slot] = t;
    live += t.byte_size();
    ++matched;
  }
  for (const auto& [name, slot] : outer_inputs_) {
    auto it = feeds.find(name);
    if (it == feeds.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("outer-scope value '", name, "' is missing"));
    }
    values[slot] = it->second;
    ++matched;
  }
  if (matched != feeds.size()) {
    for (const auto& [name, t] : feeds) {
      bool known = false;
      for (const auto& [info, slot] : inputs_) known |= info->name == name;
      for (const auto& [n, slot] : outer_inputs_) known |= n == name;
      if (!known) {
        return absl::InvalidArgumentError(
            absl::StrCat("feed '", name, "' is not a graph input"));
      }
    }
  }
  std::vector<char> keep(names_.size(), 0);
  for (const std::string& name : options.extra_outputs) {
    auto it = slots_.find(name);
    if (it == slots_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "extra output '", name, "' is not a tensor of the graph"));
    }
    keep[it->second] = 1;
  }
  peak = live;
  std::vector<Tensor> outs;
  for (const Step& step : steps_) {
    if (options.cancel != nullptr) RETURN_IF_ERROR(options.cancel->Check());
    std::vector<const Tensor*> ins(step.inputs.size(), nullptr);
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      if (step.inputs[k] >= 0) {
        const Tensor& v = values[step.inputs[k]];
        if (!v.defined()) {
          return absl::InvalidArgumentError(
              absl::StrCat(step.node->Label(), ": input '",
                           names_[step.inputs[k]], "' has no value"));
        }
        ins[k] = &v;
      }
    }
    outs.assign(step.outputs.size(), Tensor());
    exec::KernelContext ctx(*step.node, std::move(ins), &outs, options_.pool,
                            options_.max_tensor_bytes);
    ctx.cancel = options.cancel;
    for (const auto& [name, slot] : step.implicit) {
      ctx.implicit_inputs.emplace_back(name, &values[slot]);
    }
    // Bytes of each donated input, read before the kernel moves it away.
    std::array<int64_t, exec::KernelContext::kMaxDonated> donated_bytes{};
    for (int k : step.donatable) {
      Tensor& v = values[step.inputs[k]];
      if (!keep[step.inputs[k]] && v.HasUniqueBuffer()) {
        donated_bytes[k] = static_cast<int64_t>(v.byte_size());
        ctx.Donate(k, &v);
      }
    }
    absl::Status s = step.kernel->Compute(ctx);
    if (!s.ok()) {
      if (absl::StrContains(s.message(), step.node->Label())) return s;
      return absl::Status(s.code(),
                          absl::StrCat(step.node->Label(), ": ", s.message()));
    }
    for (int k : step.donatable) {
      if (!ctx.InputTaken(k)) continue;
      // Its buffer now is an output's: counted once, below.
      live -= donated_bytes[k];
      values[step.inputs[k]] = Tensor();
      ++in_place;
    }
    for (size_t k = 0; k < step.outputs.size(); ++k) {
      const int slot = step.outputs[k];
      if (slot < 0) continue;
      if (!outs[k].defined()) {
        return absl::InternalError(absl::StrCat(
            step.node->Label(), ": kernel produced no output ", k));
      }
      if (options.rewriter != nullptr) {
        (*options.rewriter)(*step.node, static_cast<int>(k), &outs[k]);
      }
      if (options.observer != nullptr) {
        (*options.observer)(*step.node, static_cast<int>(k), outs[k]);
      }
      live += outs[k].byte_size();
      values[slot] = std::move(outs[k]);
    }
    peak = std::max(peak, live);
    for (int slot : step.release) {
      if (keep[slot]) continue;
      live -= values[slot].byte_size();
      values[slot] = Tensor();
    }
  }
  std::map<std::string, Tensor> result;
  for (const auto& [name, slot] : outputs_) result[name] = values[slot];
  for (const std::string& name : options.extra_outputs) {
    result[name] = values[slots_.at(name)];
  }
  if (stats != nullptr) {
    stats->peak_bytes = peak;
    stats->nodes_run = static_cast<int64_t>(steps_.size());
    stats->outputs_in_place = in_place;
  }
  return result;
}

Executor::Executor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executor::~Executor() = default;

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(
    Model model, const ExecutorOptions& options) {
  return Create(std::make_shared<const Model>(std::move(model)), options);
}

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(
    std::shared_ptr<const Model> model, const ExecutorOptions& options) {
  if (model == nullptr) return absl::InvalidArgumentError("model is null");
  const Graph* graph = &model->graph;
  const int64_t opset = model->DefaultOpset();
  ASSIGN_OR_RETURN(auto impl,
                   Impl::Create(std::move(model), graph, opset, options, {}));
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

absl::StatusOr<std::map<std::string, Tensor>> Executor::Run(
    const std::map<std::string, Tensor>& feeds, const RunOptions& options,
    RunStats* stats) const {
  return impl_->Run(feeds, options, stats);
}

const Model& Executor::model() const { return impl_->model(); }

const ExecutorOptions& Executor::options() const { return impl_->options(); }

namespace exec {

absl::StatusOr<std::unique_ptr<Executor>> CreateSubgraphExecutor(
    std::shared_ptr<const Graph> graph, int64_t opset,
    const ExecutorOptions& options,
    const std::vector<std::string>& outer_scope) {
  // The holder keeps the branch alive; its own Model carries only the opset.
  auto keep =
      std::make_shared<std::pair<Model, std::shared_ptr<const Graph>>>();
  keep->first.opset_import[""] = opset;
  keep->second = std::move(graph);
  const Graph* g = keep->second.get();
  std::shared_ptr<const Model> holder(keep, &keep->first);
  ASSIGN_OR_RETURN(auto impl,
                   Executor::Impl::Create(std::move(holder), g, opset, options,
                                          outer_scope));
  return Executor::Impl::Wrap(std::move(impl));
}

}  // namespace exec

std::vector<std::string> SupportedOps() {
  return exec::KernelRegistry::Get().OpTypes();
}

bool IsSupportedOp(const std::string& op_type) {
  return exec::KernelRegistry::Get().Find(op_type) != nullptr;
}

}  // namespace quantd
