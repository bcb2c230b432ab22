// Micro-benchmarks of the executor's hot kernels through the public API
// (one-node models), single-threaded and on a 2-thread pool. Items/s count
// multiply-accumulates, so GFLOP/s = 2 * items/s / 1e9.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/executor/conv_kernels.h"
#include "core/executor/executor.h"
#include "core/executor/full_panels_avx512.h"
#include "core/executor/packed_gemm.h"
#include "core/runtime/thread_pool.h"

namespace quantd {
namespace {

Tensor Random(std::vector<int64_t> shape, uint32_t seed) {
  Tensor t(DType::kFloat, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.mutable_span<float>()) v = dist(rng);
  return t;
}

Attribute Ints(std::vector<int64_t> v) {
  Attribute a;
  a.type = Attribute::Type::kInts;
  a.ints = std::move(v);
  return a;
}

Attribute Int(int64_t v) {
  Attribute a;
  a.type = Attribute::Type::kInt;
  a.i = v;
  return a;
}

Model OneNode(const std::string& op, std::vector<int64_t> w_shape,
              std::map<std::string, Attribute> attrs, bool bias) {
  Model m;
  m.opset_import[""] = 13;
  ValueInfo x;
  x.name = "x";
  x.dtype = DType::kFloat;
  m.graph.inputs.push_back(x);
  m.graph.initializers["w"] = Random(w_shape, 1);
  Node n;
  n.name = "n";
  n.op_type = op;
  n.inputs = {"x", "w"};
  if (bias) {
    const int64_t out = op == "Gemm" ? w_shape[0] : w_shape[0];
    m.graph.initializers["b"] = Random({out}, 2);
    n.inputs.push_back("b");
  }
  n.outputs = {"y"};
  n.attributes = std::move(attrs);
  m.graph.nodes.push_back(n);
  ValueInfo y;
  y.name = "y";
  m.graph.outputs.push_back(y);
  return m;
}

void RunModel(benchmark::State& state, const Model& model, const Tensor& x,
              int64_t macs) {
  const int threads = static_cast<int>(state.range(0));
  ThreadPool pool(threads);
  ExecutorOptions opts;
  opts.pool = threads > 0 ? &pool : nullptr;
  auto exec = Executor::Create(model, opts);
  if (!exec.ok()) {
    state.SkipWithError(std::string(exec.status().message()).c_str());
    return;
  }
  const std::map<std::string, Tensor> feeds = {{"x", x}};
  for (auto _ : state) {
    auto out = (*exec)->Run(feeds);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations() * macs);
}

// 3x3 conv, stride 1, pad 1: C -> M channels at HxW (M = C when 0).
void BM_Conv3x3(benchmark::State& state) {
  const int64_t c = state.range(1), hw = state.range(2);
  const int64_t m_out = state.range(3) > 0 ? state.range(3) : c;
  const Model m =
      OneNode("Conv", {m_out, c, 3, 3}, {{"pads", Ints({1, 1, 1, 1})}}, true);
  RunModel(state, m, Random({1, c, hw, hw}, 3), m_out * c * 9 * hw * hw);
}
// The last two: ppocr_det's 3x3 layers on the e2e samples (320x320 input),
// 96 channels to 24 at 1/4 scale (the neck's last and the head's first) and
// at 1/8: few outputs per column.
BENCHMARK(BM_Conv3x3)
    ->ArgNames({"threads", "C", "HW", "M"})
    ->Args({0, 64, 56, 0})
    ->Args({2, 64, 56, 0})
    ->Args({0, 256, 14, 0})
    ->Args({2, 256, 14, 0})
    ->Args({0, 96, 80, 24})
    ->Args({0, 96, 40, 24})
    ->Unit(benchmark::kMillisecond);

void BM_Conv1x1(benchmark::State& state) {
  const int64_t c = state.range(1), hw = state.range(2);
  const Model m = OneNode("Conv", {2 * c, c, 1, 1}, {}, true);
  RunModel(state, m, Random({1, c, hw, hw}, 3), 2 * c * c * hw * hw);
}
BENCHMARK(BM_Conv1x1)
    ->ArgNames({"threads", "C", "HW"})
    ->Args({0, 64, 56})
    ->Args({2, 64, 56})
    ->Unit(benchmark::kMillisecond);

// MobileNetV2's pointwise convolutions: Cin -> Cout at HW x HW.
void BM_Pointwise(benchmark::State& state) {
  const int64_t cin = state.range(1), cout = state.range(2),
                hw = state.range(3);
  const Model m = OneNode("Conv", {cout, cin, 1, 1}, {}, true);
  RunModel(state, m, Random({1, cin, hw, hw}, 3), cin * cout * hw * hw);
}
BENCHMARK(BM_Pointwise)
    ->ArgNames({"threads", "Cin", "Cout", "HW"})
    ->Args({0, 32, 16, 112})
    ->Args({0, 16, 96, 112})
    ->Args({0, 24, 144, 56})
    ->Args({0, 144, 24, 56})
    ->Args({0, 96, 576, 14})
    ->Args({0, 576, 96, 14})
    ->Args({0, 160, 960, 7})
    ->Args({0, 960, 160, 7})
    ->Args({0, 320, 1280, 7})
    ->Unit(benchmark::kMillisecond);

void BM_Depthwise3x3(benchmark::State& state) {
  const int64_t c = state.range(1), hw = state.range(2), s = state.range(3);
  const Model m = OneNode("Conv", {c, 1, 3, 3},
                          {{"pads", Ints({1, 1, 1, 1})},
                           {"group", Int(c)},
                           {"strides", Ints({s, s})}},
                          true);
  const int64_t out = (hw - 1) / s + 1;
  RunModel(state, m, Random({1, c, hw, hw}, 3), c * 9 * out * out);
}
BENCHMARK(BM_Depthwise3x3)
    ->ArgNames({"threads", "C", "HW", "stride"})
    ->Args({0, 144, 56, 1})
    ->Args({2, 144, 56, 1})
    ->Args({0, 144, 56, 2})
    // MobileNetV2's other stride-1 planes: 112, 28, 14 and 7 wide.
    ->Args({0, 32, 112, 1})
    ->Args({0, 192, 28, 1})
    ->Args({0, 576, 14, 1})
    ->Args({0, 960, 7, 1})
    ->Unit(benchmark::kMillisecond);

// One image's 3x3 pad-1 layer as ConvForward multiplies it with packed
// weights, tile by tile (256 columns): `fused` 1 packs the columns from the
// image (PackedWeights::MultiplyIm2Col), 0 fills Im2Col's buffer first and
// packs from it (Multiply). The ratio of the two rows is the copy saved;
// each row first checks that both give the same bits.
void BM_PackedIm2Col(benchmark::State& state) {
  const int64_t c = state.range(0), hw = state.range(1), m = state.range(2);
  const bool fused = state.range(3) != 0;
  const int64_t stride = state.range(4), out = (hw - 1) / stride + 1;
  // 0: every row on Eigen's micro kernel; 1: full panels on AVX-512.
  const bool avx512 = state.range(5) != 0;
  exec::SetFullPanelsAvx512Enabled(avx512);
  struct Restore {
    ~Restore() { exec::SetFullPanelsAvx512Enabled(true); }
  } restore;
  if (avx512 && !exec::UseFullPanelsAvx512()) {
    state.SkipWithError("this CPU has no AVX-512F");
    return;
  }
  constexpr int64_t kTile = 256;
  exec::ConvShape s;
  s.geo = {{hw, hw}, {3, 3}, {stride, stride}, {1, 1},
           {1, 1},   {1, 1}, {out, out}};
  s.in_channels = c;
  s.kernel_size = 9;
  const Tensor x = Random({c, hw, hw}, 3);
  const Tensor w = Random({m, c * 9}, 1);
  exec::PackedWeights packed(w.data<float>(), m, c * 9);
  std::vector<float> col(static_cast<size_t>(c * 9 * kTile));
  const int64_t out_size = out * out;
  const auto layer = [&](bool from_image, float* y) {
    for (int64_t p0 = 0; p0 < out_size; p0 += kTile) {
      const int64_t width = std::min(kTile, out_size - p0);
      if (from_image) {
        if (!packed.MultiplyIm2Col(
                0, m, *exec::Im2ColSourceOf(s, x.data<float>(), c, p0), width,
                y + p0, out_size, false)) {
          return false;
        }
        continue;
      }
      exec::Im2Col(s, x.data<float>(), c, p0, width, col.data());
      if (!packed.Multiply(0, m, col.data(), width, width, y + p0, out_size,
                           false)) {
        return false;
      }
    }
    return true;
  };
  std::vector<float> y(static_cast<size_t>(m * out_size)), other(y.size());
  if (!layer(fused, y.data()) || !layer(!fused, other.data())) {
    state.SkipWithError("PackedWeights declined the product");
    return;
  }
  if (std::memcmp(y.data(), other.data(), y.size() * sizeof(float)) != 0) {
    state.SkipWithError("the two packings give different bits");
    return;
  }
  for (auto _ : state) {
    layer(fused, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * m * c * 9 * out_size);
}
// ppocr_det's 96 -> 24 3x3 layers on the e2e samples (320x320 input) at 1/4
// and 1/8 scale, a square layer, and ppocr_det's stride-2 stem (3 -> 16 at
// 320x320 input): stride 2 reads element by element either way.
BENCHMARK(BM_PackedIm2Col)
    ->ArgNames({"C", "HW", "M", "fused", "stride", "avx512"})
    ->Args({96, 80, 24, 0, 1, 0})
    ->Args({96, 80, 24, 1, 1, 0})
    ->Args({96, 80, 24, 1, 1, 1})
    ->Args({96, 40, 24, 0, 1, 0})
    ->Args({96, 40, 24, 1, 1, 0})
    ->Args({96, 40, 24, 1, 1, 1})
    ->Args({64, 56, 64, 0, 1, 0})
    ->Args({64, 56, 64, 1, 1, 0})
    ->Args({64, 56, 64, 1, 1, 1})
    ->Args({128, 28, 256, 1, 1, 0})
    ->Args({128, 28, 256, 1, 1, 1})
    ->Args({3, 320, 16, 0, 2, 0})
    ->Args({3, 320, 16, 1, 2, 0})
    ->Args({3, 320, 16, 1, 2, 1})
    ->Unit(benchmark::kMillisecond);

void BM_Gemm(benchmark::State& state) {
  const int64_t m = state.range(1), k = state.range(2), n = state.range(3);
  const Model model = OneNode("Gemm", {n, k}, {{"transB", Int(1)}}, true);
  RunModel(state, model, Random({m, k}, 3), m * k * n);
}
BENCHMARK(BM_Gemm)
    ->ArgNames({"threads", "M", "K", "N"})
    ->Args({0, 1, 1280, 1000})
    ->Args({0, 256, 512, 512})
    ->Args({2, 256, 512, 512})
    ->Unit(benchmark::kMicrosecond);

// Neg then one element-wise op over a 1xCxHWxHW tensor: with in_place 1
// the op overwrites Neg's output (its last use), with 0 an observer keeps a
// reference to every value, so the op writes a fresh buffer as before
// in-place kernels. op: 0 Clip(0, 6), 1 Relu, 2 Add of a scalar, 3 Mul of a
// full-size feed. The difference between the two rows is the saving.
void BM_ElementwiseAfterFresh(benchmark::State& state) {
  const bool in_place = state.range(0) != 0;
  const int64_t op = state.range(1), c = state.range(2), hw = state.range(3);
  Model m;
  m.opset_import[""] = 13;
  for (const char* name : {"x", "c"}) {
    ValueInfo v;
    v.name = name;
    v.dtype = DType::kFloat;
    m.graph.inputs.push_back(v);
  }
  m.graph.initializers["lo"] = Tensor::FromVector<float>({0.0f}, {});
  m.graph.initializers["hi"] = Tensor::FromVector<float>({6.0f}, {});
  m.graph.initializers["s"] = Tensor::FromVector<float>({3.0f}, {});
  Node neg;
  neg.name = "neg";
  neg.op_type = "Neg";
  neg.inputs = {"x"};
  neg.outputs = {"t"};
  Node n;
  n.name = "n";
  n.op_type = std::vector<std::string>{"Clip", "Relu", "Add", "Mul"}[op];
  n.inputs = std::vector<std::vector<std::string>>{
      {"t", "lo", "hi"}, {"t"}, {"t", "s"}, {"t", "c"}}[op];
  n.outputs = {"y"};
  m.graph.nodes = {neg, n};
  ValueInfo y;
  y.name = "y";
  m.graph.outputs.push_back(y);
  auto exec = Executor::Create(m);
  if (!exec.ok()) {
    state.SkipWithError(std::string(exec.status().message()).c_str());
    return;
  }
  const std::map<std::string, Tensor> feeds = {
      {"x", Random({1, c, hw, hw}, 3)}, {"c", Random({1, c, hw, hw}, 4)}};
  std::vector<Tensor> kept;
  const TensorObserver keep = [&](const Node&, int, const Tensor& v) {
    kept.push_back(v);
  };
  RunOptions options;
  if (!in_place) options.observer = &keep;
  for (auto _ : state) {
    auto out = (*exec)->Run(feeds, options);
    benchmark::DoNotOptimize(out);
    kept.clear();
  }
  state.SetItemsProcessed(state.iterations() * c * hw * hw);
}
BENCHMARK(BM_ElementwiseAfterFresh)
    ->ArgNames({"in_place", "op", "C", "HW"})
    ->ArgsProduct({{0, 1}, {0, 1, 2, 3}, {96}, {112}})
    ->Args({0, 0, 32, 56})
    ->Args({1, 0, 32, 56})
    ->Unit(benchmark::kMicrosecond);

// The fixed cost of one ParallelFor split across the caller and one worker
// (two trivial chunks): what every op pays to use the second thread. Before
// each call the caller works alone for `gap_us` (an inline op between two
// parallel ones), long enough for a worker that does not spin to fall
// asleep; time per iteration = gap + hand-off.
void BM_ParallelForHandoff(benchmark::State& state) {
  ThreadPool pool(1);
  const auto gap = std::chrono::microseconds(state.range(0));
  int64_t sink[2] = {0, 0};
  for (auto _ : state) {
    const auto until = std::chrono::steady_clock::now() + gap;
    while (std::chrono::steady_clock::now() < until) {
    }
    pool.ParallelFor(2, 1, [&](int64_t b, int64_t) { ++sink[b]; });
  }
  benchmark::DoNotOptimize(sink);
}
BENCHMARK(BM_ParallelForHandoff)
    ->ArgNames({"gap_us"})
    ->Arg(0)
    ->Arg(20)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace quantd
