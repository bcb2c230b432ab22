// Central finite differences as the oracle of GradientGraph: the loss is
// sum_o <w_o, output_o> with fixed random weights w, evaluated in double from
// the executor's float outputs; each checked element is perturbed by +-h.
#ifndef QUANTD_TESTS_CORE_AUTODIFF_FD_CHECK_H_
#define QUANTD_TESTS_CORE_AUTODIFF_FD_CHECK_H_

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/autodiff/gradient_graph.h"
#include "core/executor/executor.h"
#include "gtest/gtest.h"
#include "tests/core/executor/test_util.h"

namespace quantd::autodiff::testing {

inline Tensor RandomTensor(std::vector<int64_t> shape, uint64_t seed,
                           float scale = 1.0f, float offset = 0.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  Tensor t(DType::kFloat, std::move(shape));
  for (float& v : t.mutable_span<float>()) v = offset + d(rng);
  return t;
}

struct FdCheck {
  Model model;
  std::map<std::string, Tensor> feeds;
  std::vector<std::string> initializers;  // also checked
  double h = 4e-3;
  double atol = 2e-3, rtol = 2e-2;
  int max_elements = 24;  // per tensor, spread evenly
};

inline double Loss(const Model& model,
                   const std::map<std::string, Tensor>& feeds,
                   const std::map<std::string, Tensor>& weights) {
  auto exec = Executor::Create(model);
  EXPECT_TRUE(exec.ok()) << exec.status();
  auto out = (*exec)->Run(feeds);
  EXPECT_TRUE(out.ok()) << out.status();
  double loss = 0;
  for (const auto& [name, w] : weights) {
    const Tensor& y = out->at(name);
    for (int64_t i = 0; i < y.num_elements(); ++i) {
      loss += static_cast<double>(w.data<float>()[i]) * y.data<float>()[i];
    }
  }
  return loss;
}

// Runs the check; returns the number of elements compared.
inline int RunFdCheck(const FdCheck& c) {
  GradientOptions options;
  options.initializers = c.initializers;
  auto shared = std::make_shared<const Model>(c.model);
  auto grad = GradientGraph::Create(shared, options);
  EXPECT_TRUE(grad.ok()) << grad.status();
  if (!grad.ok()) return 0;
  auto tape = (*grad)->Forward(c.feeds);
  EXPECT_TRUE(tape.ok()) << tape.status();
  if (!tape.ok()) return 0;
  std::map<std::string, Tensor> weights;
  uint64_t seed = 1000;
  for (const ValueInfo& o : c.model.graph.outputs) {
    weights[o.name] = RandomTensor(tape->values.at(o.name).shape(), ++seed);
  }
  auto g = (*grad)->Backward(*tape, weights);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return 0;
  int compared = 0;
  auto check = [&](const std::string& name, const Tensor& analytic,
                   bool is_init) {
    const int64_t n = analytic.num_elements();
    const int64_t step = std::max<int64_t>(1, n / c.max_elements);
    for (int64_t i = 0; i < n; i += step) {
      double loss[2], moved[2];
      for (int s = 0; s < 2; ++s) {
        Model m = c.model;
        std::map<std::string, Tensor> feeds = c.feeds;
        Tensor& t = is_init ? m.graph.initializers.at(name) : feeds.at(name);
        t = t.Clone();
        float& v = t.mutable_data<float>()[i];
        const float before = v;
        v += static_cast<float>(s == 0 ? c.h : -c.h);
        moved[s] = std::abs(static_cast<double>(v) - before);
        loss[s] = Loss(m, feeds, weights);
      }
      const double fd = (loss[0] - loss[1]) / (moved[0] + moved[1]);
      const double a = analytic.data<float>()[i];
      EXPECT_NEAR(a, fd, c.atol + c.rtol * std::max(std::abs(a), std::abs(fd)))
          << name << "[" << i << "]";
      ++compared;
    }
  };
  for (const auto& [name, t] : g->inputs) check(name, t, false);
  for (const auto& [name, t] : g->initializers) check(name, t, true);
  return compared;
}

}  // namespace quantd::autodiff::testing

#endif  // QUANTD_TESTS_CORE_AUTODIFF_FD_CHECK_H_
