// The training pieces split over a thread pool give the same bits as on one
// thread: the grouped linear products (row and output slices, groups), the
// soft-rounding quantizer with its cached sigmoid, the regularizer's
// gradient and Adam. The oracle is the same call without a pool, which the
// finite-difference tests check on their own.
#include <cstring>
#include <vector>

#include "core/runtime/thread_pool.h"
#include "core/train/adam.h"
#include "core/train/grouped_linear.h"
#include "core/train/rounding_regularizer.h"
#include "core/train/weight_quantizers.h"
#include "gtest/gtest.h"
#include "tests/core/train/gradient_test_util.h"

namespace quantd::train {
namespace {

using testing::Random;

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

struct LinearRun {
  std::vector<double> y, dw, db;
};

LinearRun RunLinear(const LinearShape& s, ThreadPool* pool) {
  const std::vector<double> p = Random(s.rows * s.groups * s.in, 1);
  const std::vector<double> w = Random(s.out * s.in, 2);
  const std::vector<double> bias = Random(s.out, 3);
  const std::vector<double> dy = Random(s.rows * s.out, 4);
  LinearRun r;
  GroupedLinearForward(s, p, w, bias, &r.y, pool);
  r.dw = Random(s.out * s.in, 5);  // accumulated into
  r.db = Random(s.out, 6);
  GroupedLinearBackward(s, p, w, dy, nullptr, &r.dw, &r.db, pool);
  return r;
}

// Shapes around the slicing rules: rows and outputs below, at and above
// two slices, remainders that are not multiples of 4, a depth past Eigen's
// depth block (248 doubles), a single output or input (matrix-vector, not
// split) and grouped layers (split by group).
TEST(ParallelTraining, GroupedLinearEqualsOneThreadBitForBit) {
  const std::vector<LinearShape> shapes = {
      {128, 8, 64, 1},  {130, 96, 27, 1}, {256, 130, 300, 1}, {200, 5, 3, 1},
      {192, 257, 9, 1}, {128, 1, 20, 1},  {131, 129, 1, 1},   {64, 16, 9, 16},
      {300, 64, 32, 2}, {127, 200, 50, 1}};
  ThreadPool two(1), three(2);
  for (const LinearShape& s : shapes) {
    const LinearRun one = RunLinear(s, nullptr);
    for (ThreadPool* pool : {&two, &three}) {
      const LinearRun many = RunLinear(s, pool);
      EXPECT_TRUE(SameBits(many.y, one.y))
          << s.rows << "x" << s.out << "x" << s.in << " g" << s.groups;
      EXPECT_TRUE(SameBits(many.dw, one.dw))
          << s.rows << "x" << s.out << "x" << s.in << " g" << s.groups;
      EXPECT_TRUE(SameBits(many.db, one.db))
          << s.rows << "x" << s.out << "x" << s.in << " g" << s.groups;
    }
  }
}

// One soft-rounding training step (Forward, Backward, regularizer, Adam) on
// 20,000 weights (five chunks), with and without a pool.
struct StepRun {
  std::vector<double> wq, grad, v;
};

StepRun SoftRoundingStep(ThreadPool* pool) {
  const std::vector<int64_t> shape = {40, 500};
  WeightGridSpec spec;
  spec.kind = WeightGridSpec::Kind::kSymmetric;
  spec.n_bits = 4;
  spec.thresholds.assign(40, 0.8);
  QuantGrid grid = GridOf(spec);
  EXPECT_TRUE(SetChannelLayout(shape, 0, &grid).ok());
  auto q = MakeSoftRoundingQuantizer(spec, grid, Random(20000, 7, 0.3));
  q->set_pool(pool);
  TrainableParam* v = q->Params()[0];
  StepRun r;
  q->Forward(&r.wq);
  q->Backward(Random(20000, 8));
  const std::vector<double>* sigmoid = SoftRoundingSigmoids(*q);
  EXPECT_NE(sigmoid, nullptr);
  if (sigmoid != nullptr) {
    AddRoundingRegularizationGradient(0.01, 7.5, *sigmoid, v, pool);
  }
  r.grad = v->grad;
  Adam adam(0.03);
  adam.Add(v);
  adam.Step(pool);
  r.v = v->value;
  return r;
}

TEST(ParallelTraining, SoftRoundingStepEqualsOneThreadBitForBit) {
  const StepRun one = SoftRoundingStep(nullptr);
  ThreadPool pool(2);
  const StepRun many = SoftRoundingStep(&pool);
  EXPECT_TRUE(SameBits(many.wq, one.wq));
  EXPECT_TRUE(SameBits(many.grad, one.grad));
  EXPECT_TRUE(SameBits(many.v, one.v));
}

// The gradient-only regularizer from cached sigmoids adds exactly what
// AddRoundingRegularization adds.
TEST(ParallelTraining, RegularizerGradientEqualsTheFullRegularizer) {
  TrainableParam a;
  a.value = Random(5000, 11, 2.0);
  a.value[0] = 0;  // h = 0.5: |2h - 1| = 0, no gradient
  a.ZeroGrad();
  TrainableParam b = a;
  std::vector<double> sigmoid;
  for (double v : b.value) sigmoid.push_back(SoftRoundingSigmoid(v));
  ThreadPool pool(1);
  for (double beta : {20.0, 2.0}) {
    AddRoundingRegularization(0.01, beta, &a);
    AddRoundingRegularizationGradient(0.01, beta, sigmoid, &b, &pool);
    EXPECT_TRUE(SameBits(a.grad, b.grad)) << beta;
  }
}

}  // namespace
}  // namespace quantd::train
