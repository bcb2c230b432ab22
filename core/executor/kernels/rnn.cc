// Recurrent layers (ONNX semantics, float): RNN (Ht = f(XWi + HRi + b)),
// GRU (zrh gates, linear_before_reset) and LSTM (iofc gates, peepholes,
// input_forget, clip). Directions forward/reverse/bidirectional, optional
// sequence_lens (steps past a batch entry's length produce zeros and keep
// its state), layout 0 ([seq, batch, ...]) or 1 ([batch, seq, ...]).
#include <Eigen/Core>
#include <cmath>
#include <functional>

#include "core/executor/kernel.h"
#include "core/executor/kernel_util.h"
#include "core/util/status_macros.h"

namespace quantd::exec {
namespace {

using RowMat =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Act = std::function<float(float)>;

enum class Cell { kRnn, kGru, kLstm };

absl::StatusOr<Act> MakeActivation(const std::string& name, float alpha,
                                   float beta, bool has_alpha, bool has_beta) {
  auto a = [&](float def) { return has_alpha ? alpha : def; };
  auto b = [&](float def) { return has_beta ? beta : def; };
  if (name == "Sigmoid")
    return Act([](float x) { return 1.0f / (1.0f + std::exp(-x)); });
  if (name == "Tanh") return Act([](float x) { return std::tanh(x); });
  if (name == "Relu") return Act([](float x) { return x > 0 ? x : 0.0f; });
  if (name == "LeakyRelu") {
    const float al = a(0.01f);
    return Act([al](float x) { return x >= 0 ? x : al * x; });
  }
  if (name == "ThresholdedRelu") {
    const float al = a(1.0f);
    return Act([al](float x) { return x > al ? x : 0.0f; });
  }
  if (name == "HardSigmoid") {
    const float al = a(0.2f), be = b(0.5f);
    return Act([al, be](float x) {
      return std::max(0.0f, std::min(1.0f, al * x + be));
    });
  }
  if (name == "Affine") {
    const float al = a(1.0f), be = b(0.0f);
    return Act([al, be](float x) { return al * x + be; });
  }
  if (name == "ScaledTanh") {
    const float al = a(1.0f), be = b(1.0f);
    return Act([al, be](float x) { return al * std::tanh(be * x); });
  }
  if (name == "Elu") {
    const float al = a(1.0f);
    return Act([al](float x) { return x >= 0 ? x : al * (std::exp(x) - 1); });
  }
  if (name == "Softsign")
    return Act([](float x) { return x / (1 + std::abs(x)); });
  if (name == "Softplus")
    return Act([](float x) { return std::log1p(std::exp(x)); });
  return absl::UnimplementedError(
      absl::StrCat("activation ", name, " is not supported"));
}

struct RnnAttrs {
  Cell cell;
  int64_t hidden = 0;
  int num_dirs = 1;
  bool reverse_only = false;
  float clip = 0;  // 0: none
  bool input_forget = false;
  bool linear_before_reset = false;
  int64_t layout = 0;
  std::vector<Act> acts;  // per direction: f, g[, h]
};

int GatesOf(Cell c) { return c == Cell::kLstm ? 4 : c == Cell::kGru ? 3 : 1; }
int ActsOf(Cell c) { return c == Cell::kLstm ? 3 : c == Cell::kGru ? 2 : 1; }

absl::StatusOr<RnnAttrs> ReadRnnAttrs(const KernelInfo& info, Cell cell) {
  const Node& n = info.node;
  RnnAttrs a;
  a.cell = cell;
  a.hidden = n.GetInt("hidden_size", 0);
  if (a.hidden <= 0) return info.Error("hidden_size must be positive");
  const std::string dir = n.GetString("direction", "forward");
  if (dir == "bidirectional") {
    a.num_dirs = 2;
  } else if (dir == "reverse") {
    a.reverse_only = true;
  } else if (dir != "forward") {
    return info.Error(absl::StrCat("unknown direction '", dir, "'"));
  }
  a.clip = n.GetFloat("clip", 0.0f);
  a.input_forget = n.GetInt("input_forget", 0) != 0;
  a.linear_before_reset = n.GetInt("linear_before_reset", 0) != 0;
  a.layout = n.GetInt("layout", 0);
  const Attribute* names_attr = n.FindAttribute("activations");
  std::vector<std::string> names;
  if (names_attr != nullptr) names = names_attr->strings;
  const int per_dir = ActsOf(cell);
  if (names.empty()) {
    for (int d = 0; d < a.num_dirs; ++d) {
      if (cell == Cell::kRnn) {
        names.push_back("Tanh");
      } else {
        names.push_back("Sigmoid");
        names.push_back("Tanh");
        if (cell == Cell::kLstm) names.push_back("Tanh");
      }
    }
  }
  if (static_cast<int>(names.size()) != per_dir * a.num_dirs) {
    return info.Error(absl::StrCat("expected ", per_dir * a.num_dirs,
                                   " activations, got ", names.size()));
  }
  const std::vector<float> alphas = n.GetFloats("activation_alpha");
  const std::vector<float> betas = n.GetFloats("activation_beta");
  for (size_t i = 0; i < names.size(); ++i) {
    absl::StatusOr<Act> act = MakeActivation(
        names[i], i < alphas.size() ? alphas[i] : 0,
        i < betas.size() ? betas[i] : 0, i < alphas.size(), i < betas.size());
    if (!act.ok()) {
      return absl::Status(
          act.status().code(),
          absl::StrCat(n.Label(), ": ", act.status().message()));
    }
    a.acts.push_back(*std::move(act));
  }
  return a;
}

// Checks the dtypes and shapes of a recurrent layer's inputs against its
// attributes; `lens` receives the sequence lengths (all `seq` without
// sequence_lens).
absl::Status CheckRnnInputs(KernelContext& ctx, const RnnAttrs& a,
                            std::vector<int64_t>* lens_out) {
  const Tensor& x_in = *ctx.input(0);
  const Tensor& w = *ctx.input(1);
  const Tensor& rw = *ctx.input(2);
  const Tensor* bias = ctx.input(3);
  const Tensor* lens_t = ctx.input(4);
  const Tensor* h0 = ctx.input(5);
  const Tensor* c0 = a.cell == Cell::kLstm ? ctx.input(6) : nullptr;
  const Tensor* peep = a.cell == Cell::kLstm ? ctx.input(7) : nullptr;
  for (const Tensor* t : {&x_in, &w, &rw, bias, h0, c0, peep}) {
    if (t != nullptr && t->dtype() != DType::kFloat) {
      return absl::UnimplementedError(
          "only float recurrent layers are supported");
    }
  }
  if (x_in.rank() != 3) return ctx.Error("X must be 3-D");
  const int64_t H = a.hidden, G = GatesOf(a.cell), D = a.num_dirs;
  const int64_t seq = a.layout == 0 ? x_in.dim(0) : x_in.dim(1);
  const int64_t batch = a.layout == 0 ? x_in.dim(1) : x_in.dim(0);
  const int64_t in = x_in.dim(2);
  auto expect = [&](const Tensor* t, std::vector<int64_t> shape,
                    const char* what) -> absl::Status {
    if (t != nullptr && t->shape() != shape) {
      return ctx.Error(absl::StrCat(what, " is ", t->DebugString(),
                                    ", expected ", ShapeString(shape)));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(expect(&w, {D, G * H, in}, "W"));
  RETURN_IF_ERROR(expect(&rw, {D, G * H, H}, "R"));
  RETURN_IF_ERROR(expect(bias, {D, 2 * G * H}, "B"));
  const std::vector<int64_t> state_shape =
      a.layout == 0 ? std::vector<int64_t>{D, batch, H}
                    : std::vector<int64_t>{batch, D, H};
  RETURN_IF_ERROR(expect(h0, state_shape, "initial_h"));
  RETURN_IF_ERROR(expect(c0, state_shape, "initial_c"));
  RETURN_IF_ERROR(expect(peep, {D, 3 * H}, "P"));
  std::vector<int64_t>& lens = *lens_out;
  lens.assign(batch, seq);
  if (lens_t != nullptr) {
    ASSIGN_OR_RETURN(lens, ReadInts(*lens_t, "sequence_lens"));
    if (static_cast<int64_t>(lens.size()) != batch) {
      return ctx.Error("sequence_lens must have one entry per batch");
    }
    for (int64_t l : lens) {
      if (l < 0 || l > seq) return ctx.Error("sequence_lens out of range");
    }
  }
  return absl::OkStatus();
}

// Writes Y, Y_h and Y_c (those wanted) in the layer's layout from the
// layout-0 results.
absl::Status WriteRnnOutputs(KernelContext& ctx, const RnnAttrs& a, int64_t seq,
                             int64_t batch,
                             const std::vector<int64_t>& state_shape,
                             const std::vector<float>& y,
                             const std::vector<float>& yh,
                             const std::vector<float>& yc) {
  const int64_t H = a.hidden, D = a.num_dirs;
  std::vector<int64_t> y_shape = a.layout == 0
                                     ? std::vector<int64_t>{seq, D, batch, H}
                                     : std::vector<int64_t>{batch, seq, D, H};
  if (ctx.OutputWanted(0)) {
    ASSIGN_OR_RETURN(Tensor * yt, ctx.Allocate(0, DType::kFloat, y_shape));
    float* out = yt->mutable_data<float>();
    for (int64_t t = 0; t < seq; ++t) {
      for (int64_t d = 0; d < D; ++d) {
        for (int64_t b = 0; b < batch; ++b) {
          const float* src = y.data() + ((t * D + d) * batch + b) * H;
          const int64_t dst = a.layout == 0 ? ((t * D + d) * batch + b) * H
                                            : ((b * seq + t) * D + d) * H;
          std::copy_n(src, H, out + dst);
        }
      }
    }
  }
  for (int k = 1; k <= (a.cell == Cell::kLstm ? 2 : 1); ++k) {
    if (!ctx.OutputWanted(k)) continue;
    ASSIGN_OR_RETURN(Tensor * st, ctx.Allocate(k, DType::kFloat, state_shape));
    const std::vector<float>& src = k == 1 ? yh : yc;
    float* out = st->mutable_data<float>();
    for (int64_t d = 0; d < D; ++d) {
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t dst =
            a.layout == 0 ? (d * batch + b) * H : (b * D + d) * H;
        std::copy_n(src.data() + (d * batch + b) * H, H, out + dst);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ComputeRnn(KernelContext& ctx, const RnnAttrs& a) {
  const Tensor& x_in = *ctx.input(0);
  const Tensor& w = *ctx.input(1);
  const Tensor& rw = *ctx.input(2);
  const Tensor* bias = ctx.input(3);
  const Tensor* h0 = ctx.input(5);
  const Tensor* c0 = a.cell == Cell::kLstm ? ctx.input(6) : nullptr;
  const Tensor* peep = a.cell == Cell::kLstm ? ctx.input(7) : nullptr;
  std::vector<int64_t> lens;
  RETURN_IF_ERROR(CheckRnnInputs(ctx, a, &lens));
  const int64_t H = a.hidden, G = GatesOf(a.cell), D = a.num_dirs;
  const int64_t seq = a.layout == 0 ? x_in.dim(0) : x_in.dim(1);
  const int64_t batch = a.layout == 0 ? x_in.dim(1) : x_in.dim(0);
  const int64_t in = x_in.dim(2);
  const std::vector<int64_t> state_shape =
      a.layout == 0 ? std::vector<int64_t>{D, batch, H}
                    : std::vector<int64_t>{batch, D, H};
  // Work in layout 0: x [seq, batch, in].
  Tensor x = x_in;
  if (a.layout != 0) {
    x = Tensor(DType::kFloat, {seq, batch, in});
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t t = 0; t < seq; ++t) {
        std::copy_n(x_in.data<float>() + (b * seq + t) * in, in,
                    x.mutable_data<float>() + (t * batch + b) * in);
      }
    }
  }
  std::vector<float> y(seq * D * batch * H, 0.0f), yh(D * batch * H, 0.0f),
      yc(D * batch * H, 0.0f);
  auto state_at = [&](const Tensor* t, int64_t d, int64_t b) -> const float* {
    if (t == nullptr) return nullptr;
    return t->data<float>() +
           (a.layout == 0 ? (d * batch + b) * H : (b * D + d) * H);
  };
  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = a.reverse_only || d == 1;
    const Act* acts = &a.acts[d * ActsOf(a.cell)];
    Eigen::Map<const RowMat> wm(w.data<float>() + d * G * H * in, G * H, in);
    Eigen::Map<const RowMat> rm(rw.data<float>() + d * G * H * H, G * H, H);
    Eigen::Map<const RowMat> xm(x.data<float>(), seq * batch, in);
    RowMat xw = xm * wm.transpose();  // [seq*batch, G*H]
    const float* wb = bias ? bias->data<float>() + d * 2 * G * H : nullptr;
    const float* rb = wb ? wb + G * H : nullptr;
    const float* p = peep ? peep->data<float>() + d * 3 * H : nullptr;
    RowMat h(batch, H), c(batch, H);
    for (int64_t b = 0; b < batch; ++b) {
      const float* hs = state_at(h0, d, b);
      const float* cs = state_at(c0, d, b);
      for (int64_t j = 0; j < H; ++j) {
        h(b, j) = hs ? hs[j] : 0.0f;
        c(b, j) = cs ? cs[j] : 0.0f;
      }
    }
    auto clip = [&](float v) {
      return a.clip > 0 ? std::max(-a.clip, std::min(a.clip, v)) : v;
    };
    for (int64_t step = 0; step < seq; ++step) {
      const int64_t t = reverse ? seq - 1 - step : step;
      RowMat hr = h * rm.transpose();  // [batch, G*H]
      for (int64_t b = 0; b < batch; ++b) {
        // Reverse runs start at each entry's own last valid step.
        const int64_t tt = reverse ? lens[b] - 1 - step : t;
        if (tt < 0 || step >= lens[b]) continue;
        const float* xg = xw.data() + (tt * batch + b) * G * H;
        const float* hg = hr.data() + b * G * H;
        auto pre = [&](int g, int64_t j) {
          float v = xg[g * H + j] + hg[g * H + j];
          if (wb) v += wb[g * H + j] + rb[g * H + j];
          return v;
        };
        float* yo = y.data() + ((tt * D + d) * batch + b) * H;
        if (a.cell == Cell::kRnn) {
          for (int64_t j = 0; j < H; ++j) yo[j] = acts[0](clip(pre(0, j)));
          for (int64_t j = 0; j < H; ++j) h(b, j) = yo[j];
        } else if (a.cell == Cell::kGru) {
          std::vector<float> z(H), rh(H);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = acts[0](clip(pre(0, j)));
            const float r = acts[0](clip(pre(1, j)));
            if (a.linear_before_reset) {
              const float rec = hg[2 * H + j] + (rb ? rb[2 * H + j] : 0.0f);
              rh[j] = xg[2 * H + j] + (wb ? wb[2 * H + j] : 0.0f) + r * rec;
            } else {
              rh[j] = r * h(b, j);
            }
          }
          for (int64_t j = 0; j < H; ++j) {
            float v;
            if (a.linear_before_reset) {
              v = rh[j];
            } else {
              const float* rrow = rm.data() + (2 * H + j) * H;
              float rec = 0;
              for (int64_t k = 0; k < H; ++k) rec += rh[k] * rrow[k];
              v = xg[2 * H + j] + rec +
                  (wb ? wb[2 * H + j] + rb[2 * H + j] : 0.0f);
            }
            const float hh = acts[1](clip(v));
            yo[j] = (1.0f - z[j]) * hh + z[j] * h(b, j);
          }
          for (int64_t j = 0; j < H; ++j) h(b, j) = yo[j];
        } else {
          for (int64_t j = 0; j < H; ++j) {
            const float cp = c(b, j);
            float ig = pre(0, j) + (p ? p[j] * cp : 0.0f);
            float fg = pre(2, j) + (p ? p[2 * H + j] * cp : 0.0f);
            const float i = acts[0](clip(ig));
            const float f = a.input_forget ? 1.0f - i : acts[0](clip(fg));
            const float g = acts[1](clip(pre(3, j)));
            const float cn = f * cp + i * g;
            const float o =
                acts[0](clip(pre(1, j) + (p ? p[H + j] * cn : 0.0f)));
            c(b, j) = cn;
            yo[j] = o * acts[2](cn);
          }
          for (int64_t j = 0; j < H; ++j) h(b, j) = yo[j];
        }
      }
    }
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        yh[(d * batch + b) * H + j] = h(b, j);
        yc[(d * batch + b) * H + j] = c(b, j);
      }
    }
  }
  return WriteRnnOutputs(ctx, a, seq, batch, state_shape, y, yh, yc);
}

void RegisterCell(KernelRegistry& r, const char* name, Cell cell) {
  r.Register(name,
             [cell](const KernelInfo& info)
                 -> absl::StatusOr<std::unique_ptr<Kernel>> {
               ASSIGN_OR_RETURN(RnnAttrs a, ReadRnnAttrs(info, cell));
               return MakeKernel(
                   [a](KernelContext& ctx) { return ComputeRnn(ctx, a); });
             });
}

}  // namespace

void RegisterRnn(KernelRegistry& r) {
  RegisterCell(r, "RNN", Cell::kRnn);
  RegisterCell(r, "GRU", Cell::kGru);
  RegisterCell(r, "LSTM", Cell::kLstm);
}

}  // namespace quantd::exec
