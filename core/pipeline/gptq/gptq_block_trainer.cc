#include "core/pipeline/gptq/gptq_block_trainer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/pipeline/gptq/gptq_memory.h"
#include "core/pipeline/ptq/param_selection.h"
#include "core/train/activation_quantizers.h"
#include "core/train/activations.h"
#include "core/train/adam.h"
#include "core/train/quantizer_config.h"
#include "core/train/rounding_regularizer.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

// Stored kernel layout <-> the [out, in] layout of GroupedLinear.
class KernelLayout {
 public:
  KernelLayout(bool transposed, int64_t out, int64_t in)
      : transposed_(transposed), out_(out), in_(in) {}
  void ToLinear(const std::vector<double>& stored,
                std::vector<double>* linear) const {
    if (!transposed_) {
      *linear = stored;
      return;
    }
    linear->resize(stored.size());
    for (int64_t k = 0; k < in_; ++k) {
      for (int64_t m = 0; m < out_; ++m) {
        (*linear)[m * in_ + k] = stored[k * out_ + m];
      }
    }
  }
  void ToStored(const std::vector<double>& linear,
                std::vector<double>* stored) const {
    if (!transposed_) {
      *stored = linear;
      return;
    }
    stored->resize(linear.size());
    for (int64_t k = 0; k < in_; ++k) {
      for (int64_t m = 0; m < out_; ++m) {
        (*stored)[k * out_ + m] = linear[m * in_ + k];
      }
    }
  }

 private:
  bool transposed_;
  int64_t out_, in_;
};

// The student's forward and backward on a batch of rows.
class Student {
 public:
  Student(const GptqBlock& block,
          std::unique_ptr<train::TrainableActivationQuantizer> out_q,
          ThreadPool* pool)
      : block_(block), out_q_(std::move(out_q)), pool_(pool) {}

  // y = (1 - f) a + f q(a), a = acts(W p + b).
  void Forward(const train::LinearShape& s, const std::vector<double>& p,
               const std::vector<double>& w, const std::vector<double>& bias,
               double f, std::vector<double>* y) {
    pre_.resize(block_.activations.size() + 1);
    train::GroupedLinearForward(s, p, w, bias, &pre_[0], pool_);
    for (size_t k = 0; k < block_.activations.size(); ++k) {
      train::ActivationForward(block_.activations[k], pre_[k], &pre_[k + 1]);
    }
    const std::vector<double>& a = pre_.back();
    f_ = out_q_ == nullptr ? 0.0 : f;
    if (f_ == 0.0) {
      *y = a;
      return;
    }
    out_q_->Forward(a, &q_);
    y->resize(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      (*y)[i] = (1 - f_) * a[i] + f_ * q_[i];
    }
  }

  // dw (linear layout) and db accumulated from dy.
  void Backward(const train::LinearShape& s, const std::vector<double>& p,
                const std::vector<double>& w, const std::vector<double>& dy,
                std::vector<double>* dw, std::vector<double>* db) {
    std::vector<double> g = dy;
    if (f_ != 0.0) {
      out_q_->Backward(dy, &dq_);
      for (size_t i = 0; i < g.size(); ++i) {
        g[i] = (1 - f_) * dy[i] + f_ * dq_[i];
      }
    }
    for (size_t k = block_.activations.size(); k-- > 0;) {
      train::ActivationBackward(block_.activations[k], pre_[k], g, &g);
    }
    train::GroupedLinearBackward(s, p, w, g, nullptr, dw, db, pool_);
  }

 private:
  const GptqBlock& block_;
  std::unique_ptr<train::TrainableActivationQuantizer> out_q_;
  ThreadPool* pool_;
  std::vector<std::vector<double>> pre_;
  std::vector<double> q_, dq_;
  double f_ = 0;
};

double SqnrDb(double signal, double noise) {
  if (noise <= 0) return std::numeric_limits<double>::infinity();
  return 10 * std::log10(signal / noise);
}

}  // namespace

absl::StatusOr<GptqBlockResult> TrainGptqBlock(
    const GptqBlock& block, const GptqBlockData& data, const Tensor& weight,
    const WeightParams& ptq_weight, std::vector<double> bias,
    const GptqOptions& options, ThreadPool* pool,
    const CancellationToken* cancel, const std::function<void(int)>& on_epoch) {
  const train::LinearShape& shape = data.shape;
  const int64_t rows = shape.rows, out = shape.out;
  const int64_t cols = shape.groups * shape.in;
  if (rows <= 0 || static_cast<int64_t>(data.patches.size()) != rows * cols ||
      static_cast<int64_t>(data.target.size()) != rows * out ||
      static_cast<int64_t>(bias.size()) != out ||
      weight.num_elements() != out * shape.in) {
    return absl::InternalError("GPTQ block data does not match its shape");
  }
  ASSIGN_OR_RETURN(Tensor wf, weight.CastToFloat());
  std::vector<double> w_stored(wf.span<float>().begin(),
                               wf.span<float>().end());
  const KernelLayout layout(block.transposed_weight, out, shape.in);

  ASSIGN_OR_RETURN(v1::TrainableQuantizerWeightsConfig wconfig,
                   train::WeightsConfigFromPtq(ptq_weight, options.rounding));
  ASSIGN_OR_RETURN(
      std::unique_ptr<train::TrainableWeightQuantizer> quantizer,
      train::MakeWeightQuantizer(wconfig, weight.shape(), w_stored));
  quantizer->set_pool(pool);
  std::unique_ptr<train::TrainableActivationQuantizer> out_q;
  if (block.output_quantization.has_value()) {
    ASSIGN_OR_RETURN(auto aconfig,
                     train::ActivationConfigFromPtq(*block.output_quantization,
                                                    v1::TRAINING_METHOD_STE));
    ASSIGN_OR_RETURN(out_q, train::MakeActivationQuantizer(aconfig, out));
  }
  Student student(block, std::move(out_q), pool);

  // Block output SQNR over all sampled rows with hard weights, in slices
  // of rows (a multiple of 4: the products' bits do not depend on them,
  // grouped_linear.h), the sums in row order.
  const auto evaluate = [&](const std::vector<double>& w_linear,
                            const std::vector<double>& b) {
    constexpr int64_t kRowsPerSlice = kGptqEvaluationRows;
    std::vector<double> p, y;
    double signal = 0, noise = 0;
    for (int64_t r0 = 0; r0 < rows; r0 += kRowsPerSlice) {
      train::LinearShape ss = shape;
      ss.rows = std::min(kRowsPerSlice, rows - r0);
      p.assign(data.patches.begin() + r0 * cols,
               data.patches.begin() + (r0 + ss.rows) * cols);
      student.Forward(ss, p, w_linear, b, 1.0, &y);
      const float* t = data.target.data() + r0 * out;
      for (size_t i = 0; i < y.size(); ++i) {
        const double ti = t[i];
        signal += ti * ti;
        noise += (y[i] - ti) * (y[i] - ti);
      }
    }
    return SqnrDb(signal, noise);
  };

  GptqBlockResult result;
  {
    ASSIGN_OR_RETURN(Tensor ptq, DequantizedWeight(ptq_weight));
    std::vector<double> stored(ptq.span<float>().begin(),
                               ptq.span<float>().end()),
        linear;
    layout.ToLinear(stored, &linear);
    result.sqnr_before_db = evaluate(linear, bias);
  }

  train::TrainableParam b;
  b.name = "bias";
  b.group = train::VariableGroup::kBias;
  b.value = bias;
  b.ZeroGrad();
  train::Adam aux(options.lr_rounding), rest(options.lr_bias);
  train::TrainableParam* soft_v = nullptr;
  for (train::TrainableParam* p : quantizer->Params()) {
    aux.Add(p);
    if (p->name == "soft_rounding_v") soft_v = p;
  }
  const std::vector<double>* soft_sigmoid =
      train::SoftRoundingSigmoids(*quantizer);
  if (options.train_bias && block.bias_trainable) rest.Add(&b);

  const int64_t batch = std::min<int64_t>(options.batch_rows, rows);
  const int64_t steps_per_epoch = (rows + batch - 1) / batch;
  const int64_t total = steps_per_epoch * options.n_epochs;
  const train::BetaSchedule schedule;
  std::mt19937_64 rng(0x5eed0000u + block.kernel_node);
  std::vector<int64_t> order(rows);
  for (int64_t r = 0; r < rows; ++r) order[r] = r;
  std::vector<double> wq_stored, wq, pb, tb, y, dy, dw(out * shape.in),
      dw_stored;
  int64_t step = 0;
  for (int epoch = 0; epoch < options.n_epochs; ++epoch) {
    for (int64_t r = rows - 1; r > 0; --r) {
      std::swap(order[r], order[rng() % (r + 1)]);
    }
    for (int64_t start = 0; start < rows; start += batch, ++step) {
      if (cancel != nullptr) RETURN_IF_ERROR(cancel->Check());
      const int64_t n = std::min(batch, rows - start);
      train::LinearShape bs = shape;
      bs.rows = n;
      pb.resize(n * cols);
      tb.resize(n * out);
      ParallelForChunks(pool, n, 32, [&](int64_t k0, int64_t k1) {
        for (int64_t k = k0; k < k1; ++k) {
          const int64_t r = order[start + k];
          std::copy_n(data.patches.begin() + r * cols, cols,
                      pb.begin() + k * cols);
          std::copy_n(data.target.begin() + r * out, out, tb.begin() + k * out);
        }
      });
      quantizer->Forward(&wq_stored);
      layout.ToLinear(wq_stored, &wq);
      const double f = options.gradual_activation_quantization
                           ? static_cast<double>(step + 1) / total
                           : 1.0;
      student.Forward(bs, pb, wq, b.value, f, &y);
      // Loss: squared error summed over outputs, mean over positions
      // (AdaRound's ||W x - W~ x||^2 per position).
      dy.resize(y.size());
      for (size_t i = 0; i < y.size(); ++i) {
        dy[i] = 2.0 * (y[i] - tb[i]) / static_cast<double>(n);
      }
      std::fill(dw.begin(), dw.end(), 0.0);
      student.Backward(bs, pb, wq, dy, &dw, &b.grad);
      layout.ToStored(dw, &dw_stored);
      quantizer->Backward(dw_stored);
      const double beta = schedule.At(step, total);
      if (soft_v != nullptr && soft_sigmoid != nullptr && beta > 0 &&
          options.regularization_factor > 0) {
        // sigmoid(V) of this step's Forward: V has not moved since.
        train::AddRoundingRegularizationGradient(
            options.regularization_factor, beta, *soft_sigmoid, soft_v, pool);
      }
      aux.Step(pool);
      if (!rest.empty()) rest.Step(pool);
      quantizer->AfterStep();
      aux.ZeroGrad();
      b.ZeroGrad();
    }
    if (on_epoch) on_epoch(epoch);
  }
  result.steps = static_cast<int>(step);
  result.weights = quantizer->Convert();
  {
    std::vector<double> stored(result.weights.ints.size()), linear;
    for (size_t i = 0; i < stored.size(); ++i) {
      const int64_t c = result.weights.grid.ChannelOf(i);
      stored[i] = static_cast<float>(
          (result.weights.ints[i] - result.weights.grid.zero_point[c]) *
          static_cast<float>(result.weights.grid.scale[c]));
    }
    layout.ToLinear(stored, &linear);
    // The exported bias is float32.
    for (double& v : b.value) v = static_cast<float>(v);
    result.sqnr_after_db = evaluate(linear, b.value);
  }
  result.bias = std::move(b.value);
  return result;
}

}  // namespace quantd
