#include "core/pipeline/gptq/gptq_block_trainer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/pipeline/evaluation/evaluation.h"
#include "core/pipeline/gptq/gptq_memory.h"
#include "core/pipeline/ptq/param_selection.h"
#include "core/train/activation_quantizers.h"
#include "core/train/activations.h"
#include "core/train/adam.h"
#include "core/train/quantizer_config.h"
#include "core/train/rounding_regularizer.h"
#include "core/train/soft_rounding_adam.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

// Stored kernel layout <-> the [out, in] layout of GroupedLinear.
class KernelLayout {
 public:
  KernelLayout(bool transposed, int64_t out, int64_t in)
      : transposed_(transposed), out_(out), in_(in) {}
  bool transposed() const { return transposed_; }
  template <typename From, typename To>
  void ToLinear(const From* stored, To* linear) const {
    if (!transposed_) {
      std::copy(stored, stored + out_ * in_, linear);
      return;
    }
    for (int64_t k = 0; k < in_; ++k) {
      for (int64_t m = 0; m < out_; ++m) {
        linear[m * in_ + k] = static_cast<To>(stored[k * out_ + m]);
      }
    }
  }
  template <typename From, typename To>
  void ToStored(const From* linear, To* stored) const {
    if (!transposed_) {
      std::copy(linear, linear + out_ * in_, stored);
      return;
    }
    for (int64_t k = 0; k < in_; ++k) {
      for (int64_t m = 0; m < out_; ++m) {
        stored[k * out_ + m] = static_cast<To>(linear[m * in_ + k]);
      }
    }
  }

 private:
  bool transposed_;
  int64_t out_, in_;
};

// The student's forward and backward on a batch of rows: the forward
// product in double, the weight gradient's in float32 (core/train's
// GroupedLinear), the bias, activations and output quantizer on the
// [rows, out] outputs in double. The forward's last bits decide which
// outputs round up in the output quantizer, and GPTQ's result follows them
// (ppocr_cls W8A8: 26.06 dB with a float forward, 26.92 with a double one);
// the weight gradient and the rounding variables in float change nothing
// there.
class Student {
 public:
  Student(const GptqBlock& block,
          std::unique_ptr<train::TrainableActivationQuantizer> out_q,
          ThreadPool* pool)
      : block_(block), out_q_(std::move(out_q)), pool_(pool) {}

  // y = (1 - f) a + f q(a), a = acts(W p + b); w in the linear layout.
  void Forward(const train::LinearShape& s, const double* p, const double* w,
               const std::vector<double>& bias, double f,
               std::vector<double>* y) {
    pre_.resize(block_.activations.size() + 1);
    std::vector<double>& a0 = pre_[0];
    a0.resize(s.rows * s.out);
    train::GroupedLinearForward(s, p, w, a0.data(), pool_);
    for (int64_t r = 0; r < s.rows; ++r) {
      for (int64_t m = 0; m < s.out; ++m) a0[r * s.out + m] += bias[m];
    }
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

  // dw (linear layout, overwritten) and db (accumulated into) from dy.
  void Backward(const train::LinearShape& s, const float* p,
                const std::vector<double>& dy, float* dw,
                std::vector<double>* db) {
    g_ = dy;
    if (f_ != 0.0) {
      out_q_->Backward(dy, &dq_);
      for (size_t i = 0; i < g_.size(); ++i) {
        g_[i] = (1 - f_) * dy[i] + f_ * dq_[i];
      }
    }
    for (size_t k = block_.activations.size(); k-- > 0;) {
      train::ActivationBackward(block_.activations[k], pre_[k], g_, &g_);
    }
    // Each output's sum over the rows in row order.
    for (int64_t r = 0; r < s.rows; ++r) {
      for (int64_t m = 0; m < s.out; ++m) (*db)[m] += g_[r * s.out + m];
    }
    gf_.assign(g_.begin(), g_.end());
    train::GroupedLinearWeightGradient(s, p, gf_.data(), dw, pool_);
  }

 private:
  const GptqBlock& block_;
  std::unique_ptr<train::TrainableActivationQuantizer> out_q_;
  ThreadPool* pool_;
  std::vector<std::vector<double>> pre_;
  std::vector<double> q_, dq_, g_;
  std::vector<float> gf_;
  double f_ = 0;
};

// Block output SQNR over all sampled rows with hard weights (linear
// layout), in slices of rows (a multiple of 4: the products' bits do not
// depend on them, grouped_linear.h), the sums in row order.
double BlockSqnrDb(Student& student, const GptqBlockData& data,
                   const std::vector<double>& w_linear,
                   const std::vector<double>& bias) {
  const train::LinearShape& shape = data.shape;
  const int64_t cols = shape.groups * shape.in;
  std::vector<double> p, y;
  double signal = 0, noise = 0;
  for (int64_t r0 = 0; r0 < shape.rows; r0 += kGptqEvaluationRows) {
    train::LinearShape slice = shape;
    slice.rows = std::min(kGptqEvaluationRows, shape.rows - r0);
    p.assign(data.patches.begin() + r0 * cols,
             data.patches.begin() + (r0 + slice.rows) * cols);
    student.Forward(slice, p.data(), w_linear.data(), bias, 1.0, &y);
    const float* t = data.target.data() + r0 * shape.out;
    for (size_t i = 0; i < y.size(); ++i) {
      const double ti = t[i];
      signal += ti * ti;
      noise += (y[i] - ti) * (y[i] - ti);
    }
  }
  return SqnrDb(signal, noise);
}

// The fixed weights as the exported model holds them (float32), in the
// linear layout.
std::vector<double> FixedWeightsLinear(const train::FixedWeights& w,
                                       const KernelLayout& layout) {
  std::vector<float> stored(w.ints.size());
  std::vector<double> linear(w.ints.size());
  for (size_t i = 0; i < stored.size(); ++i) {
    const int64_t c = w.grid.ChannelOf(i);
    stored[i] = static_cast<float>((w.ints[i] - w.grid.zero_point[c]) *
                                   static_cast<float>(w.grid.scale[c]));
  }
  layout.ToLinear(stored.data(), linear.data());
  return linear;
}

// The rows order[start, start + n) of the block's data; the patches also
// widened to double (the forward's).
void GatherBatch(const GptqBlockData& data, const std::vector<int64_t>& order,
                 int64_t start, int64_t n, ThreadPool* pool,
                 std::vector<float>* patches, std::vector<double>* wide,
                 std::vector<float>* targets) {
  const int64_t cols = data.shape.groups * data.shape.in;
  const int64_t out = data.shape.out;
  patches->resize(n * cols);
  wide->resize(n * cols);
  targets->resize(n * out);
  ParallelForChunks(pool, n, 32, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t r = order[start + k];
      std::copy_n(data.patches.begin() + r * cols, cols,
                  patches->begin() + k * cols);
      std::copy_n(data.patches.begin() + r * cols, cols,
                  wide->begin() + k * cols);
      std::copy_n(data.target.begin() + r * out, out,
                  targets->begin() + k * out);
    }
  });
}

// What training moves: the rounding (soft rounding fused with its Adam and
// regularizer, or another quantizer with Adam at the rounding rate) and the
// bias (Adam at the bias rate, when trained).
struct Trainables {
  std::unique_ptr<train::SoftRoundingAdam> soft;
  std::unique_ptr<train::TrainableWeightQuantizer> quantizer;
  train::TrainableParam bias;
  train::Adam aux, rest;
  Trainables(std::unique_ptr<train::SoftRoundingAdam> soft_rounding,
             std::unique_ptr<train::TrainableWeightQuantizer> q,
             std::vector<double> b, const GptqOptions& options,
             bool bias_trainable)
      : soft(std::move(soft_rounding)),
        quantizer(std::move(q)),
        aux(options.lr_rounding),
        rest(options.lr_bias) {
    bias.name = "bias";
    bias.group = train::VariableGroup::kBias;
    bias.value = std::move(b);
    bias.ZeroGrad();
    if (quantizer != nullptr) {
      for (train::TrainableParam* p : quantizer->Params()) aux.Add(p);
    }
    if (options.train_bias && bias_trainable) rest.Add(&bias);
  }
  train::FixedWeights Convert() const {
    return soft != nullptr ? soft->Convert() : quantizer->Convert();
  }
};

// A step's buffers, reused from step to step.
struct StepBuffers {
  std::vector<double> wq_stored, wq, y, dy, dw_stored;
  std::vector<float> dw;
};

// One gradient step on a batch: f is the output quantizer's share, beta
// the regularizer's exponent (off when not positive).
void TrainStep(const train::LinearShape& batch_shape,
               const std::vector<float>& pb, const std::vector<double>& pbd,
               const std::vector<float>& tb, double f, double beta,
               const KernelLayout& layout, const GptqOptions& options,
               ThreadPool* pool, Student& student, Trainables& t,
               StepBuffers& s) {
  const int64_t n = batch_shape.out * batch_shape.in;
  s.wq.resize(n);
  s.dw.resize(n);
  if (t.soft != nullptr) {
    layout.ToLinear(t.soft->weights(), s.wq.data());
  } else {
    t.quantizer->Forward(&s.wq_stored);
    layout.ToLinear(s.wq_stored.data(), s.wq.data());
  }
  student.Forward(batch_shape, pbd.data(), s.wq.data(), t.bias.value, f, &s.y);
  // Loss: squared error summed over outputs, mean over positions
  // (AdaRound's ||W x - W~ x||^2 per position).
  s.dy.resize(s.y.size());
  for (size_t i = 0; i < s.y.size(); ++i) {
    s.dy[i] = 2.0 * (s.y[i] - tb[i]) / static_cast<double>(batch_shape.rows);
  }
  // The weight gradient straight into soft rounding's buffer when the
  // layouts agree.
  float* dw = t.soft != nullptr && !layout.transposed()
                  ? t.soft->weight_gradient()
                  : s.dw.data();
  student.Backward(batch_shape, pb.data(), s.dy, dw, &t.bias.grad);
  if (t.soft != nullptr) {
    if (layout.transposed()) {
      layout.ToStored(s.dw.data(), t.soft->weight_gradient());
    }
    t.soft->Step(options.regularization_factor, beta, pool);
  } else {
    s.dw_stored.resize(n);
    layout.ToStored(s.dw.data(), s.dw_stored.data());
    t.quantizer->Backward(s.dw_stored);
    t.aux.Step(pool);
    t.quantizer->AfterStep();
    t.aux.ZeroGrad();
  }
  if (!t.rest.empty()) t.rest.Step(pool);
  t.bias.ZeroGrad();
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
  // Soft rounding (the default) trains in one fused pass a step; the other
  // methods through their quantizer and Adam.
  std::unique_ptr<train::SoftRoundingAdam> soft;
  std::unique_ptr<train::TrainableWeightQuantizer> quantizer;
  if (options.rounding == v1::TRAINING_METHOD_SOFT_ROUNDING) {
    ASSIGN_OR_RETURN(
        soft, train::MakeSoftRoundingAdam(wconfig, weight.shape(), w_stored,
                                          options.lr_rounding, pool));
  } else {
    ASSIGN_OR_RETURN(quantizer, train::MakeWeightQuantizer(
                                    wconfig, weight.shape(), w_stored));
    quantizer->set_pool(pool);
  }
  std::unique_ptr<train::TrainableActivationQuantizer> out_q;
  if (block.output_quantization.has_value()) {
    ASSIGN_OR_RETURN(auto aconfig,
                     train::ActivationConfigFromPtq(*block.output_quantization,
                                                    v1::TRAINING_METHOD_STE));
    ASSIGN_OR_RETURN(out_q, train::MakeActivationQuantizer(aconfig, out));
  }
  Student student(block, std::move(out_q), pool);

  GptqBlockResult result;
  {
    ASSIGN_OR_RETURN(Tensor ptq, DequantizedWeight(ptq_weight));
    std::vector<double> linear(ptq.num_elements());
    layout.ToLinear(ptq.span<float>().data(), linear.data());
    result.sqnr_before_db = BlockSqnrDb(student, data, linear, bias);
  }

  Trainables t(std::move(soft), std::move(quantizer), std::move(bias), options,
               block.bias_trainable);
  const int64_t batch = std::min<int64_t>(options.batch_rows, rows);
  const int64_t steps_per_epoch = (rows + batch - 1) / batch;
  const int64_t total = steps_per_epoch * options.n_epochs;
  const train::BetaSchedule schedule;
  std::mt19937_64 rng(0x5eed0000u + block.kernel_node);
  std::vector<int64_t> order(rows);
  for (int64_t r = 0; r < rows; ++r) order[r] = r;
  std::vector<float> pb, tb;
  std::vector<double> pbd;
  StepBuffers buffers;
  int64_t step = 0;
  for (int epoch = 0; epoch < options.n_epochs; ++epoch) {
    for (int64_t r = rows - 1; r > 0; --r) {
      std::swap(order[r], order[rng() % (r + 1)]);
    }
    for (int64_t start = 0; start < rows; start += batch, ++step) {
      if (cancel != nullptr) RETURN_IF_ERROR(cancel->Check());
      train::LinearShape bs = shape;
      bs.rows = std::min(batch, rows - start);
      GatherBatch(data, order, start, bs.rows, pool, &pb, &pbd, &tb);
      const double f = options.gradual_activation_quantization
                           ? static_cast<double>(step + 1) / total
                           : 1.0;
      TrainStep(bs, pb, pbd, tb, f, schedule.At(step, total), layout, options,
                pool, student, t, buffers);
    }
    if (on_epoch) on_epoch(epoch);
  }
  result.steps = static_cast<int>(step);
  result.weights = t.Convert();
  // The exported bias is float32.
  for (double& v : t.bias.value) v = static_cast<float>(v);
  result.sqnr_after_db = BlockSqnrDb(
      student, data, FixedWeightsLinear(result.weights, layout), t.bias.value);
  result.bias = std::move(t.bias.value);
  return result;
}

}  // namespace quantd
