#include "core/pipeline/gptq/gptq_stage.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/executor/window.h"
#include "core/graph/graph_edit.h"
#include "core/graph/graph_index.h"
#include "core/graph/tensor.h"
#include "core/graph/transforms.h"
#include "core/pipeline/export/fake_quant.h"
#include "core/pipeline/export/qdq_lowering.h"
#include "core/pipeline/gptq/gptq_block_trainer.h"
#include "core/pipeline/gptq/gptq_blocks.h"
#include "core/pipeline/gptq/quantized_inputs_cache.h"
#include "core/pipeline/job/parallel_samples.h"
#include "core/runtime/stage_names.h"
#include "core/train/quantizer_config.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

// k distinct positions of [0, total), sorted; the same for the same
// (block, sample) in the float and the quantized pass.
std::vector<int64_t> PickRows(int64_t total, int64_t k, uint64_t seed) {
  std::vector<int64_t> all(total);
  for (int64_t i = 0; i < total; ++i) all[i] = i;
  if (k >= total) return all;
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < k; ++i) {
    const int64_t j = i + static_cast<int64_t>(rng() % (total - i));
    std::swap(all[i], all[j]);
  }
  all.resize(k);
  std::sort(all.begin(), all.end());
  return all;
}

uint64_t Seed(size_t block, size_t sample) {
  return 0x9e3779b97f4a7c15ull ^ (block * 1000003ull + sample);
}

// Output positions of a block's output tensor: rows and values per row.
bool OutputRows(const GptqBlock& b, const Tensor& t, int64_t* rows) {
  if (t.dtype() != DType::kFloat) return false;
  if (b.is_conv) {
    if (t.rank() < 3 || t.dim(1) != b.out_features) return false;
    *rows = t.num_elements() / b.out_features;
    return true;
  }
  if (t.rank() < 1 || t.dim(t.rank() - 1) != b.out_features) return false;
  *rows = t.num_elements() / b.out_features;
  return true;
}

// Values of output row r ([N, M, spatial] for convs, [rows, M] otherwise).
void OutputRow(const GptqBlock& b, const Tensor& t, int64_t r, float* out) {
  const float* y = t.data<float>();
  const int64_t m_count = b.out_features;
  if (b.is_conv) {
    const int64_t spatial = t.num_elements() / (t.dim(0) * m_count);
    const int64_t n = r / spatial, p = r % spatial;
    for (int64_t m = 0; m < m_count; ++m) {
      out[m] = y[(n * m_count + m) * spatial + p];
    }
    return;
  }
  std::copy_n(y + r * m_count, m_count, out);
}

struct BlockTargets {
  std::vector<std::vector<int64_t>> rows;  // per sample
  std::vector<int64_t> total_rows;         // per sample
  std::vector<float> values;               // [sum rows, M]
  bool ok = true;
};

absl::Status CollectTargets(const std::vector<GptqBlock>& blocks,
                            const Executor& float_exec,
                            const std::vector<SampleFeeds>& samples,
                            int64_t rows_per_sample,
                            const CancellationToken* cancel,
                            std::vector<BlockTargets>* targets) {
  targets->assign(blocks.size(), BlockTargets());
  std::map<std::string, size_t> by_tensor;
  for (size_t b = 0; b < blocks.size(); ++b) by_tensor[blocks[b].output] = b;
  for (size_t s = 0; s < samples.size(); ++s) {
    for (auto& t : *targets) {
      t.rows.emplace_back();
      t.total_rows.push_back(0);
    }
    TensorObserver observer = [&](const Node& node, int index,
                                  const Tensor& value) {
      auto it = by_tensor.find(node.outputs[index]);
      if (it == by_tensor.end()) return;
      const GptqBlock& block = blocks[it->second];
      BlockTargets& t = (*targets)[it->second];
      int64_t total = 0;
      if (!t.ok || !OutputRows(block, value, &total)) {
        t.ok = false;
        return;
      }
      t.total_rows[s] = total;
      t.rows[s] = PickRows(total, rows_per_sample, Seed(it->second, s));
      const size_t base = t.values.size();
      t.values.resize(base + t.rows[s].size() * block.out_features);
      for (size_t k = 0; k < t.rows[s].size(); ++k) {
        OutputRow(block, value, t.rows[s][k],
                  t.values.data() + base + k * block.out_features);
      }
    };
    RunOptions run;
    run.observer = &observer;
    run.cancel = cancel;
    auto out = float_exec.Run(samples[s], run);
    if (!out.ok()) {
      return absl::Status(out.status().code(),
                          absl::StrCat("GPTQ float pass, sample ", s, ": ",
                                       out.status().message()));
    }
    // Block outputs that are graph outputs are not observed.
    for (auto& [name, value] : *out) {
      auto it = by_tensor.find(name);
      if (it == by_tensor.end() || !(*targets)[it->second].rows[s].empty()) {
        continue;
      }
      Node graph_output;
      graph_output.outputs = {name};
      observer(graph_output, 0, value);
    }
  }
  for (auto& t : *targets) {
    for (size_t s = 0; s < samples.size(); ++s) {
      if (t.rows[s].empty()) t.ok = false;
    }
  }
  return absl::OkStatus();
}

// AppendPatches of a Conv over three or more spatial axes: patch column
// c * taps + t holds channel c at tap t (the kernel's [M, C/G, k...] order),
// zero outside the input.
bool AppendPatchesNd(const GptqBlock& block, const Tensor& input,
                     const std::vector<int64_t>& rows, int64_t total_rows,
                     std::vector<float>* patches, int64_t* cols) {
  if (input.rank() != static_cast<int>(block.kernel_nd.size()) + 2) {
    return false;
  }
  const std::vector<int64_t> in(input.shape().begin() + 2, input.shape().end());
  absl::StatusOr<exec::WindowGeometry> win =
      exec::ComputeWindow(*block.window_nd, in, block.kernel_nd);
  if (!win.ok()) return false;
  int64_t in_size = 1, out_size = 1, taps = 1;
  for (int64_t v : win->in) in_size *= v;
  for (int64_t v : win->out) out_size *= v;
  for (int64_t v : win->kernel) taps *= v;
  const int64_t channels = input.dim(1);
  if (out_size <= 0 || input.dim(0) * out_size != total_rows ||
      channels * taps != block.in_features * block.conv.groups) {
    return false;
  }
  *cols = channels * taps;
  const size_t base = patches->size();
  patches->resize(base + rows.size() * *cols);
  const float* x = input.data<float>();
  std::vector<int64_t> index;
  for (size_t k = 0; k < rows.size(); ++k) {
    const int64_t n = rows[k] / out_size;
    exec::WindowTaps(*win, rows[k] % out_size, &index);
    float* dst = patches->data() + base + k * *cols;
    for (int64_t c = 0; c < channels; ++c) {
      const float* plane = x + (n * channels + c) * in_size;
      for (int64_t t = 0; t < taps; ++t) {
        dst[c * taps + t] = index[t] < 0 ? 0.0f : plane[index[t]];
      }
    }
  }
  return true;
}

// Patches of the block's sampled positions from its quantized input of one
// sample; false if the input does not match the float pass.
bool AppendPatches(const GptqBlock& block, const Tensor& input,
                   const std::vector<int64_t>& rows, int64_t total_rows,
                   std::vector<float>* patches, int64_t* cols) {
  if (input.dtype() != DType::kFloat) return false;
  if (block.window_nd.has_value()) {
    return AppendPatchesNd(block, input, rows, total_rows, patches, cols);
  }
  if (block.is_conv) {
    train::ConvGeometry g = block.conv;
    if (input.rank() == 4 && g.kernel_h >= 1) {
      g.batch = input.dim(0), g.channels = input.dim(1);
      g.height = input.dim(2), g.width = input.dim(3);
    } else if (input.rank() == 3) {
      g.batch = input.dim(0), g.channels = input.dim(1);
      g.height = 1, g.width = input.dim(2);
    } else {
      return false;
    }
    if (!train::ValidateConvGeometry(g).ok()) return false;
    const int64_t oh = g.OutHeight(), ow = g.OutWidth();
    if (g.batch * oh * ow != total_rows ||
        g.PatchSize() != block.in_features * g.groups) {
      return false;
    }
    *cols = g.PatchSize();
    const size_t base = patches->size();
    patches->resize(base + rows.size() * *cols);
    for (size_t k = 0; k < rows.size(); ++k) {
      const int64_t n = rows[k] / (oh * ow), p = rows[k] % (oh * ow);
      train::ConvPatch(g, input.data<float>(), n, p / ow, p % ow,
                       patches->data() + base + k * *cols);
    }
    return true;
  }
  const int64_t kin = block.in_features;
  if (input.rank() < 1 || input.dim(input.rank() - 1) != kin ||
      input.num_elements() / kin != total_rows) {
    return false;
  }
  *cols = kin;
  const float* x = input.data<float>();
  const size_t base = patches->size();
  patches->resize(base + rows.size() * kin);
  for (size_t k = 0; k < rows.size(); ++k) {
    for (int64_t j = 0; j < kin; ++j) {
      (*patches)[base + k * kin + j] = x[rows[k] * kin + j];
    }
  }
  return true;
}

absl::Status WriteBias(const GptqBlock& block, const std::vector<double>& bias,
                       JobState* state) {
  Graph& g = state->model.graph;
  Node& node = g.nodes[block.kernel_node];
  std::vector<int64_t> shape = {static_cast<int64_t>(bias.size())};
  bool shared = true;
  if (!block.bias.empty()) {
    const Tensor* old = g.FindInitializer(block.bias);
    if (old != nullptr) shape = old->shape();
    shared = GraphIndex(g).NumUses(block.bias) != 1;
  }
  Tensor t(DType::kFloat, shape);
  for (size_t i = 0; i < bias.size(); ++i) {
    t.mutable_data<float>()[i] = static_cast<float>(bias[i]);
  }
  if (!block.bias.empty() && !shared) {
    g.initializers[block.bias] = std::move(t);
    return absl::OkStatus();
  }
  const std::string name =
      UniqueTensorName(g, absl::StrCat(node.name, "_gptq_bias"));
  g.initializers[name] = std::move(t);
  if (node.inputs.size() < 3) node.inputs.resize(3);
  node.inputs[2] = name;
  return absl::OkStatus();
}

// The block's inputs at its sampled positions in the fake-quant model with
// every block trained so far: patches into `data`, their width into `cols`.
// False if an input does not match the float pass.
absl::StatusOr<bool> CollectQuantizedInputs(
    const GptqBlock& block, const BlockTargets& block_targets,
    const std::vector<SampleFeeds>& samples,
    const ExportOptions& export_options, const ExecutorOptions& exec_options,
    const std::string& label, const CancellationToken* cancel,
    const JobState& state, QuantizedInputsCache* cache,
    GptqBlockData* block_data, int64_t* block_cols) {
  GptqBlockData& data = *block_data;
  int64_t& cols = *block_cols;
  ASSIGN_OR_RETURN(QdqPlan plan, LowerToQdqPlan(state, export_options));
  // Only the nodes between the cached tensors (or the graph inputs) and the
  // block's input run, and only their weights are fake-quantized.
  std::map<std::string, DType> cached = cache->Types();
  Model pruned = state.model;
  const bool cut = KeepOnlyWhatProduces(block.input, cached, &pruned.graph);
  if (!cut) {
    cache->Clear();  // subgraphs: every block runs the whole graph
    cached.clear();
  }
  const bool input_cached = cached.count(block.input) > 0;
  std::set<std::string> kept_nodes;
  for (const Node& n : pruned.graph.nodes) kept_nodes.insert(n.name);
  QdqPlan kept_plan = plan;
  kept_plan.weights.clear();
  for (const QdqWeight& w : plan.weights) {
    if (kept_nodes.count(w.node)) kept_plan.weights.push_back(w);
  }
  ASSIGN_OR_RETURN(Model fq_model, WithFakeQuantWeights(pruned, kept_plan));
  RemoveUnusedInitializers(&fq_model.graph);
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> fq_exec,
                   Executor::Create(std::move(fq_model), exec_options));
  ActivationFakeQuantizer quantizer(plan);
  // The graph inputs this block reads: its own input, or what the cut model
  // runs from. Only those are copied and fake-quantized: past the first
  // blocks the cache feeds the cut, and copying every input anyway cost
  // ppocr_det's GPTQ a 4.9 MB image per sample and block.
  std::set<std::string> read_inputs;
  if (!input_cached) {
    read_inputs.insert(block.input);
    for (const ValueInfo& in : fq_exec->model().graph.inputs) {
      if (!cached.count(in.name)) read_inputs.insert(in.name);
    }
  }
  // Samples run in parallel, each into its own slot; the slots are read in
  // sample order as the sequential loop read them (the first error, or the
  // first sample whose input does not fit, ends it), so the patches and the
  // outcome do not depend on the thread count.
  const int64_t n = static_cast<int64_t>(samples.size());
  std::vector<absl::Status> status(n);
  std::vector<char> sample_ok(n, 0);
  std::vector<std::vector<float>> patches(n);
  std::vector<int64_t> sample_cols(n, 0);
  std::vector<std::map<std::string, Tensor>> computed(n);  // for the cache
  RETURN_IF_ERROR(ParallelForSamples(
      n, exec_options.pool, cancel, SampleProgress{},
      [&](int64_t s) -> absl::Status {
        SampleFeeds read;
        for (const std::string& name : read_inputs) {
          auto it = samples[s].find(name);
          if (it != samples[s].end()) read.insert(*it);
        }
        SampleFeeds feeds = quantizer.FakeQuantizeFeeds(read);
        const auto& rows = block_targets.rows[s];
        const int64_t total = block_targets.total_rows[s];
        auto feed = feeds.find(block.input);
        if (input_cached || feed != feeds.end()) {
          const Tensor& input =
              input_cached ? cache->Get(s, block.input) : feed->second;
          sample_ok[s] = AppendPatches(block, input, rows, total, &patches[s],
                                       &sample_cols[s]);
          return absl::OkStatus();
        }
        for (const ValueInfo& in : fq_exec->model().graph.inputs) {
          if (cached.count(in.name)) feeds[in.name] = cache->Get(s, in.name);
        }
        bool seen = false, ok = true;
        TensorObserver observer = [&](const Node& node, int index,
                                      const Tensor& value) {
          const std::string& name = node.outputs[index];
          // A reference to the run's (fake-quantized) value, not a copy.
          if (cut && cache->WorthKeeping(name, block.kernel_node)) {
            computed[s][name] = value;
          }
          if (name != block.input || seen) return;
          seen = true;
          ok = AppendPatches(block, value, rows, total, &patches[s],
                             &sample_cols[s]);
        };
        RunOptions run;
        run.observer = &observer;
        run.rewriter = &quantizer.rewriter();
        run.cancel = cancel;
        auto out = fq_exec->Run(feeds, run);
        if (!out.ok()) {
          status[s] = absl::Status(
              out.status().code(),
              absl::StrCat("GPTQ quantized pass for ", label, ", sample ", s,
                           ": ", out.status().message()));
        }
        sample_ok[s] = ok && seen;
        return absl::OkStatus();
      }));
  if (cut) cache->Update(block.kernel_node, std::move(computed));
  size_t total = 0;  // reserved at once: growing by doubling held up to 3x
  for (const std::vector<float>& p : patches) total += p.size();
  data.patches.reserve(data.patches.size() + total);
  for (int64_t s = 0; s < n; ++s) {
    RETURN_IF_ERROR(status[s]);
    if (!sample_ok[s]) return false;
    data.patches.insert(data.patches.end(), patches[s].begin(),
                        patches[s].end());
    cols = sample_cols[s];
    patches[s] = std::vector<float>();  // free as we go
  }
  return true;
}

// The current bias of the block's kernel node (`bias_name`, zeros if none).
absl::StatusOr<std::vector<double>> CurrentBias(const GptqBlock& block,
                                                const Graph& g,
                                                const std::string& bias_name) {
  std::vector<double> bias(block.out_features, 0.0);
  if (!bias_name.empty()) {
    const Tensor* b = g.FindInitializer(bias_name);
    if (b == nullptr || b->num_elements() != block.out_features) {
      return absl::InternalError("GPTQ: bias vanished");
    }
    ASSIGN_OR_RETURN(Tensor bf, b->CastToFloat());
    for (int64_t i = 0; i < block.out_features; ++i) {
      bias[i] = bf.data<float>()[i];
    }
  }
  return bias;
}

// What every block's training shares within one stage run.
struct GptqRun {
  const GptqOptions& options;
  const std::vector<SampleFeeds>& samples;
  const ExportOptions& export_options;
  const std::vector<GptqBlock>& blocks;
  const std::vector<BlockTargets>& targets;
  ExecutorOptions exec_options;
  QuantizedInputsCache* inputs_cache;
  ThreadPool* pool;
  const CancellationToken* cancel;
  ProgressSink* progress;
};

// Trains block `bi` and writes what improves into `state`; a block that
// cannot be trained keeps its PTQ weights (a warning says why).
absl::Status TrainBlock(const GptqRun& run, size_t bi, JobState* state) {
  const GptqOptions& options = run.options;
  const std::vector<GptqBlock>& blocks = run.blocks;
  const GptqBlock& block = blocks[bi];
  Node& node = state->model.graph.nodes[block.kernel_node];
  const std::string label = node.Label();
  if (!run.targets[bi].ok) {
    state->warnings.push_back(absl::StrCat(
        "GPTQ keeps the PTQ weights of ", label, ": its output '", block.output,
        "' is not a float tensor of ", block.out_features, " channels"));
    return absl::OkStatus();
  }
  const double base = static_cast<double>(bi) / blocks.size();
  if (run.progress != nullptr) {
    run.progress->Report({stage::kGptq, base,
                          absl::StrCat("block ", bi + 1, "/", blocks.size(),
                                       ": ", label, ", collecting inputs")});
  }
  GptqBlockData data;
  int64_t cols = 0;
  ASSIGN_OR_RETURN(const bool ok,
                   CollectQuantizedInputs(block, run.targets[bi], run.samples,
                                          run.export_options, run.exec_options,
                                          label, run.cancel, *state,
                                          run.inputs_cache, &data, &cols));
  if (!ok) {
    state->warnings.push_back(
        absl::StrCat("GPTQ keeps the PTQ weights of ", label,
                     ": its quantized input does not match the float pass"));
    return absl::OkStatus();
  }
  data.shape.out = block.out_features;
  data.shape.in = block.in_features;
  data.shape.groups = block.is_conv ? block.conv.groups : 1;
  data.shape.rows = static_cast<int64_t>(data.patches.size()) / cols;
  data.target.assign(run.targets[bi].values.begin(),
                     run.targets[bi].values.end());

  const Graph& g = state->model.graph;
  const Tensor* weight = g.FindInitializer(node.Input(1));
  if (weight == nullptr) return absl::InternalError("GPTQ: kernel vanished");
  const std::string bias_name = node.Input(2);
  ASSIGN_OR_RETURN(std::vector<double> bias, CurrentBias(block, g, bias_name));
  GptqBlock current = block;
  current.bias = bias_name;  // bias correction may have renamed it
  WeightParams& wq =
      state->plans[block.kernel_node].weight_results[block.weight_index];
  const auto on_epoch = [&](int epoch) {
    if (run.progress == nullptr) return;
    run.progress->Report(
        {stage::kGptq,
         base + (epoch + 1.0) / (options.n_epochs * blocks.size()),
         absl::StrCat("block ", bi + 1, "/", blocks.size(), ": ", label,
                      ", epoch ", epoch + 1, "/", options.n_epochs)});
  };
  // Training allocates the block's own sizes for seconds; the executor
  // runs' freed buffers would stay cached beside them (memory_bench: 23
  // and 49 MiB of oww_embedding's and ppocr_cls's peaks).
  ReleaseCachedTensorBuffers();
  auto trained = TrainGptqBlock(current, data, *weight, wq, bias, options,
                                run.pool, run.cancel, on_epoch);
  if (!trained.ok()) {
    const absl::StatusCode code = trained.status().code();
    if (code == absl::StatusCode::kCancelled ||
        code == absl::StatusCode::kDeadlineExceeded) {
      return trained.status();
    }
    // A block the trainer cannot handle keeps its PTQ weights.
    state->warnings.push_back(absl::StrCat("GPTQ keeps the PTQ weights of ",
                                           label, ": ",
                                           trained.status().message()));
    return absl::OkStatus();
  }
  const GptqBlockResult& r = *trained;
  GptqLayerError e;
  e.node = node.name;
  e.sqnr_before_db = r.sqnr_before_db;
  e.sqnr_after_db = r.sqnr_after_db;
  e.steps = r.steps;
  e.applied = r.sqnr_after_db > r.sqnr_before_db;
  if (e.applied) {
    RETURN_IF_ERROR(train::WriteFixedWeights(r.weights, &wq));
    if (options.train_bias && current.bias_trainable) {
      RETURN_IF_ERROR(WriteBias(current, r.bias, state));
    }
  }
  state->gptq_layers.push_back(std::move(e));
  return absl::OkStatus();
}

}  // namespace

absl::Status RunGptq(const GptqOptions& options, const Executor& float_exec,
                     const std::vector<SampleFeeds>& all_samples,
                     const ExportOptions& export_options, JobState* state,
                     ThreadPool* pool, const CancellationToken* cancel,
                     ProgressSink* progress,
                     const GptqAfterBlock& after_block) {
  std::vector<SampleFeeds> samples = all_samples;
  if (options.max_samples > 0 &&
      static_cast<int>(samples.size()) > options.max_samples) {
    samples.resize(options.max_samples);
  }
  if (samples.empty()) return absl::OkStatus();
  std::vector<std::string> skipped;
  const std::vector<GptqBlock> blocks = FindGptqBlocks(*state, &skipped);
  for (const std::string& s : skipped) {
    state->warnings.push_back(
        absl::StrCat("GPTQ keeps the PTQ weights of ", s));
  }
  const int64_t rows_per_sample =
      (options.rows_per_block + static_cast<int64_t>(samples.size()) - 1) /
      static_cast<int64_t>(samples.size());
  std::vector<BlockTargets> targets;
  RETURN_IF_ERROR(CollectTargets(blocks, float_exec, samples, rows_per_sample,
                                 cancel, &targets));
  QuantizedInputsCache inputs_cache(state->model.graph, samples.size());
  GptqRun run{options, samples,       export_options, blocks, targets,
              {},      &inputs_cache, pool,           cancel, progress};
  run.exec_options.pool = pool;
  int previous_kernel = -1;
  for (size_t bi = 0; bi < blocks.size(); ++bi) {
    // The cache holds what nodes before the previous kernel computed: valid
    // for blocks in node order only.
    if (blocks[bi].kernel_node < previous_kernel) inputs_cache.Clear();
    previous_kernel = blocks[bi].kernel_node;
    if (cancel != nullptr) RETURN_IF_ERROR(cancel->Check());
    RETURN_IF_ERROR(TrainBlock(run, bi, state));
    if (after_block != nullptr) {
      ASSIGN_OR_RETURN(const bool go_on,
                       after_block(bi + 1, blocks.size(), *state));
      if (!go_on) break;
    }
  }
  RemoveUnusedInitializers(&state->model.graph);
  if (progress != nullptr) progress->Report({stage::kGptq, 1.0, "done"});
  return absl::OkStatus();
}

}  // namespace quantd
