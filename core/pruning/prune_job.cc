#include "core/pruning/prune_job.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/datagen/data_generation.h"
#include "core/datagen/generate_job.h"
#include "core/datagen/generated_calibration.h"
#include "core/graph/onnx_export.h"
#include "core/graph/onnx_import.h"
#include "core/pipeline/job/quantize_job.h"
#include "core/pipeline/job/samples.h"
#include "core/pruning/apply_pruning.h"
#include "core/pruning/channel_groups.h"
#include "core/pruning/importance.h"
#include "core/pruning/output_sqnr.h"
#include "core/pruning/pruning_section.h"
#include "core/pruning/simd_size.h"
#include "core/pruning/weights_memory.h"
#include "core/runtime/stage_names.h"
#include "core/util/request_checks.h"
#include "core/util/status_macros.h"
#include "google/protobuf/util/message_differencer.h"
#include "nlohmann/json.hpp"

namespace quantd {
namespace {

using pruning::ChannelGroups;
using pruning::PruningSection;

void Report(const PruneContext& c, const std::string& stage, double fraction,
            const std::string& message = "") {
  if (c.progress != nullptr) c.progress->Report({stage, fraction, message});
}

absl::Status CheckCancel(const PruneContext& c) {
  return c.cancel == nullptr ? absl::OkStatus() : c.cancel->Check();
}

int64_t TargetBytes(const v1::PruneRequest& r, int64_t before) {
  if (r.target_case() == v1::PruneRequest::kWeightsMemoryBytes) {
    return r.weights_memory_bytes();
  }
  return static_cast<int64_t>(
      std::floor(r.weights_memory_fraction() * static_cast<double>(before)));
}

std::string NoSectionsMessage(const pruning::SectionSearch& search) {
  std::string msg =
      "model has no prunable layers: pruning needs a Conv (group 1), Gemm or "
      "MatMul with constant weights whose output reaches another such layer "
      "only through per-channel nodes (BatchNormalization, activations, "
      "elementwise ops with a scalar or per-channel constant), with no "
      "branch, residual Add or Concat in between";
  if (!search.rejected.empty()) {
    const size_t n = std::min<size_t>(search.rejected.size(), 8);
    absl::StrAppend(&msg, "; rejected: ",
                    absl::StrJoin(search.rejected.begin(),
                                  search.rejected.begin() + n, "; "),
                    search.rejected.size() > n ? "; ..." : "");
  }
  return msg;
}

std::string ReportJson(const v1::PruneResult& r,
                       const std::vector<std::string>& rejected) {
  nlohmann::json j;
  j["importance_metric"] = r.importance_metric();
  j["tpc"] = r.tpc();
  j["weights_memory_bytes"] = {{"before", r.weights_memory_before()},
                               {"target", r.weights_memory_target()},
                               {"after", r.weights_memory_after()}};
  if (std::isfinite(r.output_sqnr_db())) {
    j["output_sqnr_db"] = r.output_sqnr_db();
  } else {
    j["output_sqnr_db"] = "inf";
  }
  j["layers"] = nlohmann::json::array();
  for (const v1::LayerPruning& l : r.layers()) {
    j["layers"].push_back({{"node", l.node()},
                           {"exit_node", l.exit_node()},
                           {"channels", l.channels()},
                           {"kept", l.kept()},
                           {"removed", l.channels() - l.kept()},
                           {"simd_size", l.simd_size()},
                           {"removed_channels", l.removed_channels()}});
  }
  // Kernel layers that are no section's entry, and why.
  j["not_prunable"] = rejected;
  return j.dump(2);
}

// The generated images as request samples (for the quantize stage).
google::protobuf::RepeatedPtrField<v1::Sample> SampleProtos(
    const std::vector<SampleFeeds>& feeds) {
  google::protobuf::RepeatedPtrField<v1::Sample> samples;
  for (const SampleFeeds& feed : feeds) {
    v1::Sample* sample = samples.Add();
    for (const auto& [name, tensor] : feed) {
      *sample->add_inputs() = TensorToSampleProto(tensor, name);
    }
  }
  return samples;
}

// Images generated from the model's BatchNormalization statistics (stage
// "generate"), one feed each.
absl::StatusOr<std::vector<SampleFeeds>> GenerateSamples(
    const v1::PruneRequest& request, const Model& model,
    const PruneContext& c) {
  Report(c, stage::kGenerate, 0);
  ASSIGN_OR_RETURN(datagen::DataGenOptions options,
                   datagen::DataGenOptionsFromGeneratedCalibration(
                       request.generated_calibration()));
  ASSIGN_OR_RETURN(
      datagen::GeneratedData data,
      datagen::GenerateData(std::make_shared<const Model>(model), options,
                            {c.pool, c.cancel, c.progress}));
  std::vector<SampleFeeds> feeds;
  feeds.reserve(data.samples.size());
  for (Tensor& t : data.samples) {
    feeds.push_back({{data.input_name, std::move(t)}});
  }
  return feeds;
}

absl::Status RunQuantizeStage(const v1::PruneRequest& request,
                              const std::vector<SampleFeeds>& calibration,
                              const PruneContext& c, v1::PruneResult* result) {
  v1::QuantizeRequest q = request.quantize();
  q.set_onnx_model(result->pruned_onnx());
  q.clear_model_ref();
  q.clear_samples_ref();
  q.clear_generated_calibration();
  *q.mutable_tpc() = request.tpc();
  *q.mutable_calibration_samples() = request.has_generated_calibration()
                                         ? SampleProtos(calibration)
                                         : request.calibration_samples();
  if (q.evaluation_samples().empty()) {
    *q.mutable_evaluation_samples() = request.evaluation_samples();
  }
  if (q.request_id().empty()) q.set_request_id(request.request_id());
  JobContext jc;
  jc.registry = c.registry;
  jc.pool = c.pool;
  jc.cancel = c.cancel;
  jc.progress = c.progress;
  jc.limits = c.limits;
  ASSIGN_OR_RETURN(*result->mutable_quantized(), RunQuantizeJob(q, jc));
  return absl::OkStatus();
}

// Scores from NaN or Inf activations (diverged generated images, a model
// that overflows) would rank channels at random: the job fails instead.
absl::Status CheckScoresFinite(const Graph& graph,
                               const std::vector<PruningSection>& sections,
                               const std::vector<std::vector<double>>& traces) {
  for (size_t s = 0; s < traces.size() && s < sections.size(); ++s) {
    for (size_t ch = 0; ch < traces[s].size(); ++ch) {
      if (!std::isfinite(traces[s][ch])) {
        return absl::InternalError(absl::StrCat(
            "importance: the score of channel ", ch, " of ",
            graph.nodes[sections[s].entry].Label(), " is ", traces[s][ch],
            " (non-finite activations on the calibration samples?)"));
      }
    }
  }
  return absl::OkStatus();
}

// PruneRequest.quantize's fields that the pruning request supplies: set
// (the TPC: set to another one), they would be silently replaced, so they
// are refused.
absl::Status CheckNestedQuantize(const v1::PruneRequest& r) {
  const v1::QuantizeRequest& q = r.quantize();
  const struct {
    bool set;
    const char* field;
  } supplied[] = {
      {!q.onnx_model().empty(), "onnx_model"},
      {!q.model_ref().empty(), "model_ref"},
      {q.calibration_samples_size() > 0, "calibration_samples"},
      {!q.samples_ref().empty(), "samples_ref"},
      {q.has_generated_calibration(), "generated_calibration"},
      {q.has_tpc() && !google::protobuf::util::MessageDifferencer::Equals(
                          q.tpc(), r.tpc()),
       "tpc"},
  };
  for (const auto& s : supplied) {
    if (s.set) {
      return absl::InvalidArgumentError(absl::StrCat(
          "quantize.", s.field,
          ": set, but the pruned model is quantized with the pruning "
          "request's model, TPC and samples; leave it empty"));
    }
  }
  return CheckNumThreads(q.num_threads(), "quantize.num_threads");
}

}  // namespace

absl::Status ValidatePruneRequest(const v1::PruneRequest& request,
                                  const JobLimits& limits) {
  RETURN_IF_ERROR(CheckRequestId(request.request_id()));
  RETURN_IF_ERROR(CheckNumThreads(request.num_threads(), "num_threads"));
  if (request.num_score_approximations() < 0 ||
      request.num_score_approximations() > limits.max_samples) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_score_approximations: ", request.num_score_approximations(),
        " is not in [0, ", limits.max_samples, "] (0: MCT's 32)"));
  }
  if (request.has_quantize()) {
    RETURN_IF_ERROR(CheckNestedQuantize(request));
  }
  if (request.onnx_model().empty()) {
    return absl::InvalidArgumentError("onnx_model: empty");
  }
  if (static_cast<int64_t>(request.onnx_model().size()) >
      limits.max_model_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("onnx_model: ", request.onnx_model().size(),
                     " bytes, over the limit of ", limits.max_model_bytes));
  }
  switch (request.target_case()) {
    case v1::PruneRequest::kWeightsMemoryFraction: {
      const double f = request.weights_memory_fraction();
      if (!(f > 0 && f <= 1)) {
        return absl::InvalidArgumentError(
            absl::StrCat("weights_memory_fraction: ", f, " is not in (0, 1]"));
      }
      break;
    }
    case v1::PruneRequest::kWeightsMemoryBytes:
      if (request.weights_memory_bytes() <= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "weights_memory_bytes: ", request.weights_memory_bytes(),
            " is not positive"));
      }
      break;
    default:
      return absl::InvalidArgumentError(
          "weights memory target: missing (weights_memory_fraction or "
          "weights_memory_bytes)");
  }
  if (request.has_generated_calibration()) {
    if (!request.calibration_samples().empty()) {
      return absl::InvalidArgumentError(
          "generated_calibration: set together with calibration_samples "
          "(send one or the other)");
    }
    RETURN_IF_ERROR(datagen::ValidateGeneratedCalibration(
        request.generated_calibration(), limits.max_samples));
  } else if (request.calibration_samples().empty()) {
    return absl::InvalidArgumentError(
        "calibration_samples: empty (the importance metric and the SQNR "
        "need samples; or set generated_calibration)");
  }
  RETURN_IF_ERROR(
      ValidateSampleProtos(request.calibration_samples(), "calibration_samples",
                           limits.max_samples, limits.max_sample_bytes));
  RETURN_IF_ERROR(ValidateSampleProtos(request.evaluation_samples(),
                                       "evaluation_samples", limits.max_samples,
                                       limits.max_sample_bytes));
  return CheckEnumsAndNumbers(request);
}

absl::StatusOr<v1::PruneResult> RunPruneJob(const v1::PruneRequest& request,
                                            const PruneContext& c) {
  RETURN_IF_ERROR(ValidatePruneRequest(request, c.limits));
  if (c.registry == nullptr) {
    return absl::InternalError("RunPruneJob: no TPC registry");
  }
  Report(c, stage::kImport, 0);
  ASSIGN_OR_RETURN(ResolvedTpc tpc, ResolveTpc(request.tpc(), *c.registry));
  ImportOptions import;
  import.max_model_bytes = c.limits.max_model_bytes;
  ASSIGN_OR_RETURN(Model model, ImportOnnx(request.onnx_model(), import));
  if (c.on_import) RETURN_IF_ERROR(c.on_import(model));
  std::vector<SampleFeeds> calibration;
  if (request.has_generated_calibration()) {
    ASSIGN_OR_RETURN(calibration, GenerateSamples(request, model, c));
  } else {
    ASSIGN_OR_RETURN(
        calibration,
        DecodeSamples(request.calibration_samples(), model.graph.inputs,
                      "calibration_samples", c.limits.max_sample_bytes));
  }
  std::vector<SampleFeeds> evaluation = calibration;
  if (!request.evaluation_samples().empty()) {
    ASSIGN_OR_RETURN(
        evaluation,
        DecodeSamples(request.evaluation_samples(), model.graph.inputs,
                      "evaluation_samples", c.limits.max_sample_bytes));
  }
  ASSIGN_OR_RETURN(auto metric,
                   pruning::MakeImportanceMetric(request.importance_metric()));

  Report(c, "sections", 0);
  const pruning::SectionSearch search =
      pruning::FindPruningSections(model.graph);
  if (search.sections.empty()) {
    return absl::FailedPreconditionError(NoSectionsMessage(search));
  }
  const std::vector<PruningSection>& sections = search.sections;
  ASSIGN_OR_RETURN(tpc::OnnxTpcAttachment attachment,
                   tpc::OnnxTpcAttachment::Create(tpc.tpc));
  std::vector<int> simd;
  for (const PruningSection& s : sections) {
    ASSIGN_OR_RETURN(int size, pruning::SimdSize(model.graph.nodes[s.entry],
                                                 model.graph, attachment));
    simd.push_back(size);
  }

  Report(c, stage::kImportance, 0, metric->Name());
  RETURN_IF_ERROR(CheckCancel(c));
  pruning::ImportanceContext ic;
  ic.pool = c.pool;
  ic.cancel = c.cancel;
  ic.progress = c.progress;
  ic.num_score_approximations = request.num_score_approximations();
  ASSIGN_OR_RETURN(auto traces,
                   metric->HessianTraces(model, sections, calibration, ic));
  RETURN_IF_ERROR(CheckScoresFinite(model.graph, sections, traces));
  std::vector<ChannelGroups> groups;
  for (size_t s = 0; s < sections.size(); ++s) {
    const Tensor* kernel =
        model.graph.FindInitializer(sections[s].entry_kernel.initializer);
    groups.push_back(pruning::GroupChannels(
        traces[s], *kernel, sections[s].entry_kernel.axis, simd[s]));
  }

  Report(c, "mask", 0);
  const pruning::PrunedWeightsMemory memory(model.graph, sections);
  const int64_t target = TargetBytes(request, memory.unpruned_bytes());
  ASSIGN_OR_RETURN(std::vector<int> kept_groups,
                   pruning::GreedyKeptGroups(groups, memory, target));

  Report(c, stage::kPrune, 0);
  v1::PruneResult result;
  std::vector<std::vector<int64_t>> kept(sections.size());
  for (size_t s = 0; s < sections.size(); ++s) {
    for (int g = 0; g < kept_groups[s]; ++g) {
      kept[s].insert(kept[s].end(), groups[s].groups[g].begin(),
                     groups[s].groups[g].end());
    }
    std::sort(kept[s].begin(), kept[s].end());
    v1::LayerPruning* l = result.add_layers();
    l->set_node(model.graph.nodes[sections[s].entry].name);
    l->set_exit_node(model.graph.nodes[sections[s].exit].name);
    l->set_channels(sections[s].channels);
    l->set_kept(static_cast<int64_t>(kept[s].size()));
    l->set_simd_size(simd[s]);
    for (int64_t ch = 0, k = 0; ch < sections[s].channels; ++ch) {
      if (k < static_cast<int64_t>(kept[s].size()) && kept[s][k] == ch) {
        ++k;
      } else {
        l->add_removed_channels(ch);
      }
    }
  }
  Model pruned = model;
  RETURN_IF_ERROR(pruning::ApplyPruning(sections, kept, &pruned));
  ASSIGN_OR_RETURN(*result.mutable_pruned_onnx(), ExportOnnx(pruned));
  result.set_weights_memory_before(memory.unpruned_bytes());
  result.set_weights_memory_target(target);
  result.set_weights_memory_after(pruning::FloatWeightsBytes(pruned.graph));
  result.set_importance_metric(metric->Name());
  result.set_tpc(tpc.ref);

  Report(c, stage::kEvaluate, 0);
  ASSIGN_OR_RETURN(double sqnr, pruning::OutputSqnrDb(model, pruned, evaluation,
                                                      c.pool, c.cancel));
  result.set_output_sqnr_db(sqnr);
  result.set_report_json(ReportJson(result, search.rejected));
  if (request.has_quantize())
    RETURN_IF_ERROR(RunQuantizeStage(request, calibration, c, &result));
  Report(c, "done", 1);
  return result;
}

}  // namespace quantd
