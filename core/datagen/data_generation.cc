#include "core/datagen/data_generation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/autodiff/gradient_graph.h"
#include "core/datagen/bn_targets.h"
#include "core/datagen/image_pipeline.h"
#include "core/datagen/losses.h"
#include "core/runtime/stage_names.h"
#include "core/util/status_macros.h"

namespace quantd::datagen {
namespace {

// Adam over one batch of images, with ReduceLROnPlateau (torch defaults:
// relative threshold 1e-4, factor 0.5, min lr 1e-4; MCT's patience).
struct BatchOptimizer {
  std::vector<float> m, v;
  int64_t t = 0;
  double lr = 0, best = HUGE_VAL;
  int64_t bad = 0, patience = 0;

  void Step(float* p, const float* g, int64_t n) {
    ++t;
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    const float c1 = static_cast<float>(lr / (1 - std::pow(b1, t)));
    const float c2 = static_cast<float>(1 / std::sqrt(1 - std::pow(b2, t)));
    for (int64_t i = 0; i < n; ++i) {
      m[i] = 0.9f * m[i] + 0.1f * g[i];
      v[i] = 0.999f * v[i] + 0.001f * g[i] * g[i];
      p[i] -= c1 * m[i] / (std::sqrt(v[i]) * c2 + static_cast<float>(eps));
    }
  }
  void Schedule(double loss) {
    if (loss < best * (1 - 1e-4)) {
      best = loss;
      bad = 0;
    } else if (++bad > patience) {
      lr = std::max(lr * 0.5, 1e-4);
      bad = 0;
    }
  }
};

void ForEach(ThreadPool* pool, int64_t n,
             const std::function<void(int64_t)>& f) {
  if (pool == nullptr) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  pool->ParallelFor(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f(i);
  });
}

// One optimisation step of a batch: forward every image (pool threads), the
// batch statistics of each aligned tensor in image order, the seeds, backward
// through the network and the image pipeline. Returns the batch's loss.
struct BatchStep {
  const ImageGeometry& geo;
  const std::vector<BnTarget>& targets;
  const std::vector<std::string>& outputs;  // differentiable graph outputs
  const autodiff::GradientGraph& grad;
  const std::string& input;
  double output_loss_multiplier;
  const DataGenContext& ctx;

  absl::StatusOr<double> Run(const float* images,
                             const std::vector<Augmentation>& aug,
                             float* grads) const {
    const int64_t count = static_cast<int64_t>(aug.size());
    const int64_t psize = geo.padded_size();
    std::vector<autodiff::Tape> tapes(count);
    std::vector<absl::Status> status(count);
    ForEach(ctx.pool, count, [&](int64_t k) {
      std::vector<float> scratch;
      Tensor x = Tensor::Uninitialized(
          DType::kFloat, {1, geo.channels, geo.height, geo.width});
      PipelineForward(geo, aug[k], images + k * psize, x.mutable_data<float>(),
                      &scratch);
      auto tape = grad.Forward({{input, x}}, ctx.cancel);
      if (tape.ok()) {
        tapes[k] = std::move(tape).value();
      } else {
        status[k] = tape.status();
      }
    });
    for (const absl::Status& s : status) RETURN_IF_ERROR(s);
    const double layer_weight = 1.0 / static_cast<double>(targets.size());
    std::vector<BnGradient> bn(targets.size());
    double loss = 0;
    for (size_t t = 0; t < targets.size(); ++t) {
      ChannelSums sums;
      for (int64_t k = 0; k < count; ++k) {
        RETURN_IF_ERROR(AddChannelSums(
            targets[t], tapes[k].values.at(targets[t].tensor), &sums));
      }
      bn[t] = BnAlignment(targets[t], sums, layer_weight);
      loss += bn[t].loss;
    }
    std::vector<double> out_loss(count, 0.0);
    ForEach(ctx.pool, count, [&](int64_t k) {
      std::map<std::string, Tensor> seeds;
      for (size_t t = 0; t < targets.size(); ++t) {
        AddSeed(targets[t].tensor,
                BnSeed(bn[t], tapes[k].values.at(targets[t].tensor)), &seeds);
      }
      for (const std::string& o : outputs) {
        Tensor seed;
        out_loss[k] += OutputLossSeed(
            tapes[k].values.at(o),
            output_loss_multiplier / static_cast<double>(count), &seed);
        AddSeed(o, std::move(seed), &seeds);
      }
      auto g = grad.Backward(tapes[k], seeds, ctx.cancel);
      tapes[k] = autodiff::Tape();  // free the activations early
      if (!g.ok()) {
        status[k] = g.status();
        return;
      }
      std::vector<float> scratch;
      PipelineBackward(geo, aug[k], g->inputs.at(input).data<float>(),
                       grads + k * psize, &scratch);
    });
    for (const absl::Status& s : status) RETURN_IF_ERROR(s);
    for (double l : out_loss) loss += l;
    return loss;
  }

  static void AddSeed(const std::string& name, Tensor s,
                      std::map<std::string, Tensor>* seeds) {
    auto [pos, fresh] = seeds->emplace(name, s);
    if (fresh) return;
    float* d = pos->second.mutable_data<float>();
    for (int64_t i = 0; i < s.num_elements(); ++i) d[i] += s.data<float>()[i];
  }
};

}  // namespace

absl::StatusOr<ImageGeometry> InputGeometry(const Graph& g,
                                            const DataGenOptions& o,
                                            std::string* name) {
  if (g.inputs.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data generation needs a model with one image input, this one has ",
        g.inputs.size()));
  }
  const ValueInfo& in = g.inputs[0];
  *name = in.name;
  if (in.dtype != DType::kFloat || (in.has_shape && in.shape.size() != 4)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", in.name, "' must be a float [N, C, H, W] image"));
  }
  std::vector<int64_t> chw;
  if (!o.shape.empty()) {
    if (o.shape.size() != 3 && o.shape.size() != 4) {
      return absl::InvalidArgumentError("shape must be [N,] C, H, W");
    }
    chw.assign(o.shape.end() - 3, o.shape.end());
    for (int d = 0; d < 3 && in.has_shape; ++d) {
      if (in.shape[d + 1] >= 0 && in.shape[d + 1] != chw[d]) {
        return absl::InvalidArgumentError(
            absl::StrCat("shape dim ", d + 1, " is ", chw[d], " but input '",
                         in.name, "' declares ", in.shape[d + 1]));
      }
    }
  } else {
    for (int d = 1; d < 4 && in.has_shape; ++d) chw.push_back(in.shape[d]);
    if (chw.size() != 3 || *std::min_element(chw.begin(), chw.end()) <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", in.name,
          "' has dynamic dims: pass the image shape (shape / --shape C,H,W)"));
    }
  }
  for (int64_t d : chw) {
    if (d <= 0 || d > 16384) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape: ", d, " is not in [1, 16384] (input '", in.name, "')"));
    }
  }
  ImageGeometry geo;
  geo.channels = chw[0];
  geo.height = chw[1];
  geo.width = chw[2];
  geo.extra = o.extra_pixels;
  geo.smoothing = o.smoothing;
  if (!o.input_min.empty()) {
    if (o.input_min.size() != 1 &&
        static_cast<int64_t>(o.input_min.size()) != geo.channels) {
      return absl::InvalidArgumentError(
          absl::StrCat("input_min / input_max: ", o.input_min.size(),
                       " values; give one, or one per channel of input '",
                       in.name, "' (", geo.channels, ")"));
    }
    geo.lo = o.input_min;
    geo.hi = o.input_max;
  } else if (geo.channels == 3) {  // torchvision normalisation of [0, 1]
    const float mean[3] = {0.485f, 0.456f, 0.406f};
    const float std[3] = {0.229f, 0.224f, 0.225f};
    for (int c = 0; c < 3; ++c) {
      geo.lo.push_back(-mean[c] / std[c]);
      geo.hi.push_back((1.0f - mean[c]) / std[c]);
    }
  }
  return geo;
}

std::string AlignmentCoverageWarning(const Graph& graph,
                                     const std::vector<std::string>& aligned) {
  const std::set<std::string> wanted(aligned.begin(), aligned.end());
  // Conv/Gemm/MatMul layers counted in node (topological) order; an aligned
  // tensor sits at the count of layers before its producer. The widest run
  // of layers between two aligned tensors (or the input and the first) is
  // unconstrained by the BN loss.
  int layers = 0, widest = 0, previous = -1;
  std::string previous_name = "the input", from, to;
  auto aligned_at = [&](int position, const std::string& tensor) {
    if (position - previous - 1 > widest) {
      widest = position - previous - 1;
      from = previous_name;
      to = tensor;
    }
    previous = position;
    previous_name = absl::StrCat("'", tensor, "'");
  };
  for (const ValueInfo& in : graph.inputs) {
    if (wanted.count(in.name) > 0) aligned_at(0, in.name);
  }
  for (const Node& n : graph.nodes) {
    for (const std::string& o : n.outputs) {
      if (wanted.count(o) > 0) aligned_at(layers, o);
    }
    if (n.op_type == "Conv" || n.op_type == "Gemm" || n.op_type == "MatMul") {
      ++layers;
    }
  }
  if (2 * widest <= layers) return "";
  return absl::StrCat(
      widest, " of the model's ", layers,
      " Conv/Gemm/MatMul layers lie between ", from, " and '", to,
      "' with no aligned statistics (BatchNormalization folded by the "
      "export?): such images can calibrate worse than noise. Pass those "
      "layers' expected statistics (--stats / statistics_json) or real "
      "samples");
}

absl::StatusOr<GeneratedData> GenerateData(std::shared_ptr<const Model> model,
                                           const DataGenOptions& options,
                                           const DataGenContext& ctx) {
  RETURN_IF_ERROR(ValidateDataGenOptions(options));
  GeneratedData out;
  ASSIGN_OR_RETURN(const ImageGeometry geo,
                   InputGeometry(model->graph, options, &out.input_name));
  ASSIGN_OR_RETURN(const std::vector<BnTarget> targets,
                   FindBnTargets(model->graph, options));
  ASSIGN_OR_RETURN(auto grad, autodiff::GradientGraph::Create(model));
  for (const BnTarget& t : targets) {
    if (!grad->IsDifferentiable(t.tensor)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", t.tensor, "' (", t.source,
                       ") does not depend on the input"));
    }
  }
  std::vector<std::string> outputs;
  for (const ValueInfo& o : model->graph.outputs) {
    if (grad->IsDifferentiable(o.name)) outputs.push_back(o.name);
  }
  out.aligned_tensors = static_cast<int64_t>(targets.size());
  std::vector<std::string> aligned;
  for (const BnTarget& t : targets) aligned.push_back(t.tensor);
  if (std::string w = AlignmentCoverageWarning(model->graph, aligned);
      !w.empty()) {
    out.warnings.push_back(std::move(w));
  }
  const int64_t n = options.count, psize = geo.padded_size();
  std::mt19937_64 rng(options.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> images(n * psize);  // MCT's Gaussian initialisation
  for (float& v : images) v = normal(rng);
  const int64_t bs = std::min(options.batch_size, n);
  const int64_t batches = (n + bs - 1) / bs;
  std::vector<BatchOptimizer> opt(batches);
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t size = (std::min(n, (b + 1) * bs) - b * bs) * psize;
    opt[b].m.assign(size, 0.0f);
    opt[b].v.assign(size, 0.0f);
    opt[b].lr = options.learning_rate;
    opt[b].patience = options.iterations / 50;
  }
  const BatchStep step{geo,   targets,        outputs,
                       *grad, out.input_name, options.output_loss_multiplier,
                       ctx};
  std::vector<float> grads(bs * psize);
  for (int64_t it = 0; it < options.iterations; ++it) {
    if (ctx.cancel != nullptr) RETURN_IF_ERROR(ctx.cancel->Check());
    double loss_sum = 0;
    for (int64_t b = 0; b < batches; ++b) {
      const int64_t first = b * bs, count = std::min(n, first + bs) - first;
      std::vector<Augmentation> aug(count);
      for (Augmentation& a : aug) {
        a.flip = (rng() & 1) != 0;
        a.top = static_cast<int64_t>(rng() % (geo.extra + 1));
        a.left = static_cast<int64_t>(rng() % (geo.extra + 1));
      }
      ASSIGN_OR_RETURN(
          const double loss,
          step.Run(images.data() + first * psize, aug, grads.data()));
      opt[b].Step(images.data() + first * psize, grads.data(), count * psize);
      opt[b].Schedule(loss);
      loss_sum += loss;
    }
    // A diverged optimisation never recovers: stop at once, naming it,
    // rather than return images of NaN as a result.
    if (!std::isfinite(loss_sum)) {
      return absl::InternalError(absl::StrFormat(
          "generate: the loss is %g at iteration %d (the optimisation "
          "diverged; lower learning_rate)",
          loss_sum, it + 1));
    }
    if (it == 0) out.first_loss = loss_sum / batches;
    out.final_loss = loss_sum / batches;
    if (ctx.progress != nullptr) {
      ctx.progress->Report(
          {stage::kGenerate, static_cast<double>(it + 1) / options.iterations,
           absl::StrFormat("iteration %d/%d, loss %.4g", it + 1,
                           options.iterations, out.final_loss)});
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    Tensor x = Tensor::Uninitialized(DType::kFloat,
                                     {1, geo.channels, geo.height, geo.width});
    PipelineFinalize(geo, images.data() + i * psize, x.mutable_data<float>());
    const float* v = x.data<float>();
    for (int64_t j = 0; j < x.num_elements(); ++j) {
      if (!std::isfinite(v[j])) {
        return absl::InternalError(absl::StrCat(
            "generate: image ", i, " holds a non-finite value at element ", j,
            " (the optimisation diverged; lower learning_rate)"));
      }
    }
    out.samples.push_back(std::move(x));
  }
  return out;
}

}  // namespace quantd::datagen
