// If: runs then_branch or else_branch (subgraphs that may read outer-scope
// values) and returns its outputs.
#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/executor/subgraph.h"
#include "core/util/status_macros.h"

namespace quantd::exec {

void RegisterIf(KernelRegistry& r) {
  r.Register(
      "If",
      [](const KernelInfo& info) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        std::shared_ptr<Executor> branches[2];
        std::vector<std::string> outputs[2];
        const char* names[2] = {"else_branch", "then_branch"};
        for (int b = 0; b < 2; ++b) {
          const Attribute* a = info.node.FindAttribute(names[b]);
          if (a == nullptr || a->type != Attribute::Type::kGraph || !a->g) {
            return info.Error(
                absl::StrCat("missing graph attribute ", names[b]));
          }
          if (a->g->outputs.size() != info.node.outputs.size()) {
            return info.Error(absl::StrCat(
                names[b], " has ", a->g->outputs.size(),
                " outputs, the node has ", info.node.outputs.size()));
          }
          absl::StatusOr<std::unique_ptr<Executor>> e = CreateSubgraphExecutor(
              a->g, info.opset, info.options, info.outer_scope);
          if (!e.ok()) {
            return absl::Status(e.status().code(),
                                absl::StrCat(info.node.Label(), " ", names[b],
                                             ": ", e.status().message()));
          }
          branches[b] = *std::move(e);
          for (const ValueInfo& v : a->g->outputs) outputs[b].push_back(v.name);
        }
        return MakeKernel(
            [branches, outputs](KernelContext& ctx) -> absl::Status {
              ASSIGN_OR_RETURN(double cond, ReadScalar(*ctx.input(0), "cond"));
              const int b = cond != 0 ? 1 : 0;
              std::map<std::string, Tensor> feeds;
              for (const auto& [name, t] : ctx.implicit_inputs) {
                if (t->defined()) feeds[name] = *t;
              }
              RunOptions opts;
              opts.cancel = ctx.cancel;
              ASSIGN_OR_RETURN(auto result, branches[b]->Run(feeds, opts));
              for (size_t k = 0; k < outputs[b].size(); ++k) {
                ctx.SetOutput(static_cast<int>(k), result.at(outputs[b][k]));
              }
              return absl::OkStatus();
            });
      });
}

}  // namespace quantd::exec
