#include "core/pipeline/quality_target/quality_target.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/pipeline/corrections/corrections.h"
#include "core/pipeline/evaluation/sensitivity_analysis.h"
#include "core/pipeline/export/qdq_lowering.h"
#include "core/pipeline/mixed_precision/resource_utilization.h"
#include "core/pipeline/ptq/hessian_scores.h"
#include "core/pipeline/ptq/param_selection.h"
#include "core/pipeline/quality_target/target_measure.h"
#include "core/pipeline/quality_target/target_upgrades.h"
#include "core/runtime/stage_names.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

// A job-wide option edit that costs no memory, and its undoing.
struct OptionEdit {
  std::string name, from, to;
  std::function<void(PtqOptions*)> apply, revert;
  // Whether stage (b2) tries it again at the ceiling when stage (a) did not
  // keep it: the corrections, whose effect depends on which tensors stay
  // 8-bit; not z_threshold, whose clipping costs more on finer grids, nor
  // the weights' error method, which the upgrades of activations leave be.
  bool retry_at_ceiling = true;
};

// What stage (a) tries, in order: corrections first (no re-selection), then
// the selection's own options. The z-score filter's 8 is the value
// quantd's docs suggest (--config 'z_threshold: 8').
std::vector<OptionEdit> OptionEdits(const PtqOptions& o, bool gptq) {
  std::vector<OptionEdit> edits;
  if (o.shift_negative_activation_correction &&
      !o.shift_negative_params_search) {
    edits.push_back(
        {"shift_negative_params_search", "false", "true",
         [](PtqOptions* p) { p->shift_negative_params_search = true; },
         [](PtqOptions* p) { p->shift_negative_params_search = false; }});
  }
  if (!o.shift_negative_constant_add) {
    edits.push_back(
        {"shift_negative_constant_add", "false", "true",
         [](PtqOptions* p) { p->shift_negative_constant_add = true; },
         [](PtqOptions* p) { p->shift_negative_constant_add = false; }});
  }
  if (!o.activation_bias_correction) {
    edits.push_back(
        {"activation_bias_correction", "false", "true",
         [](PtqOptions* p) { p->activation_bias_correction = true; },
         [](PtqOptions* p) { p->activation_bias_correction = false; }});
  }
  if (std::isinf(o.z_threshold)) {
    edits.push_back({"z_threshold", "inf", "8",
                     [](PtqOptions* p) { p->z_threshold = 8; },
                     [](PtqOptions* p) {
                       p->z_threshold = std::numeric_limits<double>::infinity();
                     },
                     /*retry_at_ceiling=*/false});
  }
  if (gptq && o.weights_error_method != quantizers::ErrorMethod::kHmse) {
    const quantizers::ErrorMethod requested = o.weights_error_method;
    edits.push_back(
        {"weights_error_method", "as requested", "HMSE",
         [](PtqOptions* p) {
           p->weights_error_method = quantizers::ErrorMethod::kHmse;
         },
         [requested](PtqOptions* p) { p->weights_error_method = requested; },
         /*retry_at_ceiling=*/false});
  }
  return edits;
}

// Options that parameter selection, shift-negative correction or mixed
// precision read.
bool SameSelection(const PtqOptions& a, const PtqOptions& b) {
  return a.z_threshold == b.z_threshold &&
         a.activation_error_method == b.activation_error_method &&
         a.weights_error_method == b.weights_error_method &&
         a.l_p_value == b.l_p_value &&
         a.shift_negative_activation_correction ==
             b.shift_negative_activation_correction &&
         a.shift_negative_ratio == b.shift_negative_ratio &&
         a.shift_negative_params_search == b.shift_negative_params_search &&
         a.shift_negative_constant_add == b.shift_negative_constant_add;
}

std::string UpgradeText(const BitUpgrade& u) {
  return absl::StrCat(u.node_name, u.weights ? " weights " : " activation ",
                      u.from_bits, "->", u.to_bits);
}

// Whether the mixed-precision request set any resource target.
bool HasBudget(const mixed_precision::ResourceFigures& t) {
  return t.weights_memory_bytes || t.activation_memory_bytes ||
         t.total_memory_bytes || t.bops;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

std::string Describe(const std::vector<BitUpgrade>& ups) {
  return absl::StrCat(ups.size(), " bit upgrade(s), last ",
                      UpgradeText(ups.back()));
}

struct Trial {
  double figure = 0;
  JobState state;
  MixedPrecisionOutcome mixed_precision;
};

class TargetSearch {
 public:
  TargetSearch(const QualityTargetInputs& in, const JobState& calibrated,
               std::shared_ptr<const QualityMeter> meter, ThreadPool* pool,
               const CancellationToken* cancel, ProgressSink* progress)
      : in_(in),
        target_(*in.spec->target),
        calibrated_(calibrated),
        meter_(std::move(meter)),
        pool_(pool),
        cancel_(cancel),
        progress_(progress) {}

  absl::StatusOr<QualityTargetOutcome> Run(JobState* state,
                                           MixedPrecisionOutcome* mp);

 private:
  absl::StatusOr<Trial> Try(const PtqOptions& options,
                            const std::vector<BitUpgrade>& upgrades,
                            const std::string& action);
  bool Met(double figure) const { return TargetMet(target_, figure); }
  double GainEpsilon() const { return quantd::GainEpsilon(target_); }
  absl::Status TryOptions(PtqOptions* options, Trial* best);
  // Trial `t` of edit `e` (`applied`: the options it ran with) replaces
  // *best when it gains: the report's step is kept, the change recorded,
  // `e` joins kept_. False (nothing changed) otherwise.
  bool KeepIfGain(const OptionEdit& e, const PtqOptions& applied, Trial&& t,
                  PtqOptions* options, Trial* best);
  absl::Status RevisitOptions(const std::vector<BitUpgrade>& upgrades,
                              PtqOptions* options, Trial* best);
  absl::StatusOr<std::shared_ptr<const hessian::HessianScores>> HessianScores();
  // The option's HMSE scores when it asks for HMSE without them; false (and a
  // step noting why) when the model has no gradient for them.
  absl::StatusOr<bool> WithHessianScores(PtqOptions* options);
  // Re-selects (and re-runs mixed precision) when `options` change what
  // selection reads.
  absl::Status Select(const PtqOptions& options);
  std::string OptionsText() const;
  absl::StatusOr<PtqOptions> ReuseOptions(PtqOptions options);
  absl::StatusOr<std::vector<BitUpgrade>> RankedUpgrades(
      const Trial& at, std::vector<BitUpgrade> ups);
  absl::StatusOr<Trial> UpgradeSearch(const PtqOptions& options,
                                      std::vector<BitUpgrade> ranked,
                                      Trial ceiling,
                                      std::vector<BitUpgrade>* chosen);
  void RecordUpgrades(const std::vector<BitUpgrade>& chosen);
  absl::StatusOr<size_t> UpgradesWithinBudget(
      const std::vector<BitUpgrade>& ranked);
  absl::StatusOr<QualityTargetOutcome> Finish(Trial best, JobState* state,
                                              MixedPrecisionOutcome* mp);

  const QualityTargetInputs& in_;
  const QualityTargetOptions& target_;
  const JobState& calibrated_;
  std::shared_ptr<const QualityMeter> meter_;  // and the outcome's
  ThreadPool* pool_;
  const CancellationToken* cancel_;
  ProgressSink* progress_;
  // Selection (and mixed precision) for `selected_options_`.
  JobState selected_;
  PtqOptions selected_options_;
  MixedPrecisionOutcome selected_mp_;
  // The job's mixed-precision sensitivities, which every re-selection's
  // search reuses (RunMixedPrecision: they would cost a whole MP stage per
  // option trial).
  MixedPrecisionSensitivity sensitivity_;
  QualityTargetOutcome outcome_;
  std::vector<OptionEdit> kept_;      // stage (a)'s, in order
  std::vector<OptionEdit> rejected_;  // stage (a) tried and did not keep
  int trials_ = 0;
  std::shared_ptr<const hessian::HessianScores> hessian_;  // computed once
};

absl::StatusOr<std::shared_ptr<const hessian::HessianScores>>
TargetSearch::HessianScores() {
  if (hessian_ == nullptr) {
    if (progress_ != nullptr) {
      progress_->Report({stage::kTarget, std::min(0.95, trials_ / 24.0),
                         "Hessian scores for the HMSE trial (16 samples)"});
    }
    ASSIGN_OR_RETURN(hessian_,
                     ComputeHessianScores(calibrated_, *in_.calibration, pool_,
                                          cancel_, nullptr));
  }
  return hessian_;
}

absl::StatusOr<bool> TargetSearch::WithHessianScores(PtqOptions* options) {
  if (!NeedsHessianScores(*options)) return true;
  auto scores = HessianScores();
  if (scores.ok()) {
    options->hessian_scores = *std::move(scores);
    return true;
  }
  // No backward pass for an op of the model (UNIMPLEMENTED naming the node)
  // or no float output depends on the kernels: the trial is skipped, not the
  // job. Cancellation and other errors end the search.
  if (!SkipsTheTrial(scores.status())) return scores.status();
  const std::string note = absl::StrCat("weights_error_method: HMSE skipped (",
                                        scores.status().message(), ")");
  outcome_.report.steps.push_back({note, std::nullopt, false});
  if (progress_ != nullptr) {
    progress_->Report({stage::kTarget, std::min(0.95, trials_ / 24.0), note});
  }
  return false;
}

absl::StatusOr<Trial> TargetSearch::Try(const PtqOptions& options,
                                        const std::vector<BitUpgrade>& upgrades,
                                        const std::string& action) {
  if (cancel_ != nullptr) RETURN_IF_ERROR(cancel_->Check());
  if (progress_ != nullptr) {
    progress_->Report({stage::kTarget, std::min(0.95, trials_ / 24.0),
                       absl::StrCat("trial ", trials_ + 1, ": ", action)});
  }
  ++trials_;
  const auto start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(Select(options));
  Trial t;
  t.state = selected_;
  t.state.options = options;
  t.mixed_precision = selected_mp_;
  if (!upgrades.empty()) {
    RETURN_IF_ERROR(RunMixedPrecision(OverridesFor(upgrades), kMpSimdPadding,
                                      *in_.shapes, *in_.calibration, &t.state,
                                      pool_, cancel_, nullptr)
                        .status());
  }
  RETURN_IF_ERROR(ApplyCorrections(&t.state, cancel_));
  ASSIGN_OR_RETURN(
      QualityFigures f,
      meter_->Measure(t.state, in_.spec->export_options, pool_, cancel_));
  t.figure = Figure(f, target_.metric);
  outcome_.report.steps.push_back(
      {action, t.figure, false, SecondsSince(start)});
  if (trials_ == 1 || t.figure > outcome_.best_figure) {
    outcome_.best_figure = t.figure;
    outcome_.best_description = action;
  }
  return t;
}

absl::Status TargetSearch::Select(const PtqOptions& options) {
  if (SameSelection(options, selected_options_)) return absl::OkStatus();
  selected_ = calibrated_;
  selected_.options = options;
  RETURN_IF_ERROR(SelectAllParams(&selected_, pool_, cancel_, nullptr,
                                  in_.selected_weights));
  RETURN_IF_ERROR(RunShiftNegativeStage(&selected_, in_.shapes, cancel_));
  selected_mp_ = MixedPrecisionOutcome();
  if (in_.spec->mixed_precision.Requested()) {
    ASSIGN_OR_RETURN(
        selected_mp_,
        RunMixedPrecision(in_.spec->mixed_precision, kMpSimdPadding,
                          *in_.shapes, *in_.calibration, &selected_, pool_,
                          cancel_, nullptr, &sensitivity_));
  }
  selected_options_ = options;
  return absl::OkStatus();
}

std::string TargetSearch::OptionsText() const {
  if (kept_.empty()) return "with the options as configured";
  std::vector<std::string> names;
  for (const OptionEdit& e : kept_)
    names.push_back(absl::StrCat(e.name, ": ", e.to));
  return absl::StrCat("with ", absl::StrJoin(names, ", "));
}

// Stage (a): each option edit kept when it helps.
absl::Status TargetSearch::TryOptions(PtqOptions* options, Trial* best) {
  for (const OptionEdit& e : OptionEdits(*options, in_.spec->gptq_enabled)) {
    if (Met(best->figure)) break;
    PtqOptions o = *options;
    e.apply(&o);
    ASSIGN_OR_RETURN(const bool can_try, WithHessianScores(&o));
    if (!can_try) continue;
    ASSIGN_OR_RETURN(Trial t, Try(o, {}, absl::StrCat(e.name, ": ", e.to)));
    const bool moved = t.figure != best->figure;
    if (!KeepIfGain(e, o, std::move(t), options, best) && e.retry_at_ceiling &&
        moved) {
      // A figure equal to the bit says the option changed nothing here
      // (no site for it), which the upgrades do not change either.
      rejected_.push_back(e);
    }
  }
  return absl::OkStatus();
}

bool TargetSearch::KeepIfGain(const OptionEdit& e, const PtqOptions& applied,
                              Trial&& t, PtqOptions* options, Trial* best) {
  if (!(t.figure > best->figure + GainEpsilon())) return false;
  outcome_.report.steps.back().kept = true;
  outcome_.report.changes.push_back({"", e.name, e.from, e.to});
  kept_.push_back(e);
  *options = applied;
  *best = std::move(t);
  return true;
}

// After the upgrades: each option stage (a) kept, undone when that now
// scores higher, then each correction it did not keep (whose trial moved
// the figure), tried again and kept when that scores higher. Stage (a)
// judges the options on 8-bit tensors,
// where z_threshold's clipped outliers cost less than the coarser grid;
// once the same tensors are 16-bit the clipping dominates (ppocr_det: 69
// 16-bit tensors clipped to a quarter or less of their range). Likewise a
// correction of many 8-bit tensors can lose on some what it wins on others,
// and win once only a few stay 8-bit (ppocr_det's
// shift_negative_constant_add: -0.4 dB at 8 bits, +0.15 dB at the ceiling,
// +2.4 dB with channel equalization).
absl::Status TargetSearch::RevisitOptions(
    const std::vector<BitUpgrade>& upgrades, PtqOptions* options, Trial* best) {
  std::vector<std::string> reverted;
  for (const OptionEdit& e : kept_) {
    if (Met(best->figure)) break;
    PtqOptions o = *options;
    e.revert(&o);
    ASSIGN_OR_RETURN(Trial t,
                     Try(o, upgrades,
                         absl::StrCat(e.name, ": ", e.from, " again, with the ",
                                      upgrades.size(), " upgrade(s)")));
    if (t.figure > best->figure + GainEpsilon()) {
      outcome_.report.steps.back().kept = true;
      auto& changes = outcome_.report.changes;
      changes.erase(std::remove_if(changes.begin(), changes.end(),
                                   [&](const QualityTargetChange& c) {
                                     return c.node.empty() && c.what == e.name;
                                   }),
                    changes.end());
      *options = o;
      *best = std::move(t);
      reverted.push_back(e.name);
    }
  }
  kept_.erase(std::remove_if(kept_.begin(), kept_.end(),
                             [&](const OptionEdit& e) {
                               return std::find(reverted.begin(),
                                                reverted.end(),
                                                e.name) != reverted.end();
                             }),
              kept_.end());
  for (const OptionEdit& e : rejected_) {
    if (Met(best->figure)) break;
    PtqOptions o = *options;
    e.apply(&o);
    ASSIGN_OR_RETURN(const bool can_try, WithHessianScores(&o));
    if (!can_try) continue;
    ASSIGN_OR_RETURN(Trial t,
                     Try(o, upgrades,
                         absl::StrCat(e.name, ": ", e.to, " again, with the ",
                                      upgrades.size(), " upgrade(s)")));
    KeepIfGain(e, o, std::move(t), options, best);
  }
  return absl::OkStatus();
}

// The upgrades the TPC allows, most estimated gain per byte first: a
// layer's gain is what the output SQNR gains when only it is left float.
absl::StatusOr<std::vector<BitUpgrade>> TargetSearch::RankedUpgrades(
    const Trial& at, std::vector<BitUpgrade> ups) {
  if (in_.reach_memory_stage) {
    RETURN_IF_ERROR(in_.reach_memory_stage(JobMemoryStage::kTargetRanking));
  }
  ASSIGN_OR_RETURN(QdqPlan plan,
                   LowerToQdqPlan(at.state, in_.spec->export_options));
  // The ranking needs an estimate, not the figure: a few samples (the
  // analysis costs two cone runs per node and sample).
  const size_t n = std::min(in_.evaluation->size(),
                            static_cast<size_t>(kTargetRankingSamples));
  const std::vector<SampleFeeds> ranking(in_.evaluation->begin(),
                                         in_.evaluation->begin() + n);
  SensitivityAnalysisOptions analysis;
  analysis.chunk_samples = AnalysisChunkSamples(in_.activation_bytes);
  analysis.only_float_runs = true;
  ASSIGN_OR_RETURN(
      std::vector<LayerSensitivity> sens,
      AnalyzeLayerSensitivity(in_.float_model->model(), at.state.model, plan,
                              ranking, analysis, pool_, cancel_, nullptr));
  double now_db = at.figure;
  if (target_.metric == QualityTargetOptions::Metric::kCosine ||
      n < in_.evaluation->size()) {
    ASSIGN_OR_RETURN(
        QualityMeter meter,
        QualityMeter::Create(*in_.float_model, ranking, pool_, cancel_));
    ASSIGN_OR_RETURN(
        QualityFigures now,
        meter.Measure(at.state, in_.spec->export_options, pool_, cancel_));
    now_db = now.sqnr_db;
  }
  std::map<std::string, double> gain;
  for (const LayerSensitivity& s : sens) {
    double g = s.sqnr_only_float_db - now_db;
    if (std::isnan(g)) g = 0;
    gain[s.node] = std::clamp(g, 0.0, 1000.0);
  }
  for (BitUpgrade& u : ups) {
    auto it = gain.find(u.node_name);
    u.gain_db = it != gain.end() ? it->second : 0.0;
  }
  std::stable_sort(ups.begin(), ups.end(),
                   [](const BitUpgrade& a, const BitUpgrade& b) {
                     return a.gain_db / std::max(a.cost_bytes, 1.0) >
                            b.gain_db / std::max(b.cost_bytes, 1.0);
                   });
  return ups;
}

// Stage (b), once every upgrade together reaches the target (`ceiling`):
// doubling prefixes of `ranked` until one reaches it, bisection to the
// shortest such prefix, then drops of upgrades that turn out unneeded
// (lowest ranked first, at most kMaxDrops trials). Returns the reaching
// trial with the fewest upgrades found.
absl::StatusOr<Trial> TargetSearch::UpgradeSearch(
    const PtqOptions& options, std::vector<BitUpgrade> ranked, Trial ceiling,
    std::vector<BitUpgrade>* chosen) {
  constexpr int kMaxDrops = 8;
  const int n = static_cast<int>(ranked.size());
  auto prefix = [&](int k) {
    return std::vector<BitUpgrade>(ranked.begin(), ranked.begin() + k);
  };
  int failed = 0, reached = n;
  Trial hit = std::move(ceiling);
  for (int k = 1; k < n; k *= 2) {
    ASSIGN_OR_RETURN(Trial t, Try(options, prefix(k), Describe(prefix(k))));
    if (Met(t.figure)) {
      outcome_.report.steps.back().kept = true;
      reached = k;
      hit = std::move(t);
      break;
    }
    failed = k;
  }
  while (reached - failed > 1) {
    const int mid = failed + (reached - failed) / 2;
    ASSIGN_OR_RETURN(Trial t, Try(options, prefix(mid), Describe(prefix(mid))));
    if (Met(t.figure)) {
      outcome_.report.steps.back().kept = true;
      reached = mid;
      hit = std::move(t);
    } else {
      failed = mid;
    }
  }
  *chosen = prefix(reached);
  int drops = 0;
  for (int j = reached - 2; j >= 0 && drops < kMaxDrops; --j, ++drops) {
    std::vector<BitUpgrade> fewer = *chosen;
    const std::string text = UpgradeText(fewer[j]);
    fewer.erase(fewer.begin() + j);
    ASSIGN_OR_RETURN(Trial t, Try(options, fewer, absl::StrCat("drop ", text)));
    if (Met(t.figure)) {
      outcome_.report.steps.back().kept = true;
      *chosen = std::move(fewer);
      hit = std::move(t);
    }
  }
  return hit;
}

// A previous search's kept options (the equalization trial's second
// search), applied at once.
absl::StatusOr<PtqOptions> TargetSearch::ReuseOptions(PtqOptions options) {
  const PtqOptions requested = options;
  for (const OptionEdit& e : OptionEdits(requested, in_.spec->gptq_enabled)) {
    if (std::find(in_.reuse_options->begin(), in_.reuse_options->end(),
                  e.name) == in_.reuse_options->end()) {
      continue;
    }
    PtqOptions o = options;
    e.apply(&o);
    ASSIGN_OR_RETURN(const bool can_use, WithHessianScores(&o));
    if (!can_use) continue;
    options = std::move(o);
    kept_.push_back(e);
    outcome_.report.changes.push_back({"", e.name, e.from, e.to});
  }
  return options;
}

void TargetSearch::RecordUpgrades(const std::vector<BitUpgrade>& chosen) {
  for (const BitUpgrade& u : chosen) {
    outcome_.report.changes.push_back(
        {u.node_name, u.weights ? "weights_bits" : "activation_bits",
         absl::StrCat(u.from_bits), absl::StrCat(u.to_bits)});
  }
}

// (a) the free options on the 8-bit configuration; then every upgrade the
// TPC allows at once (the ceiling): when even that misses the target, no
// prefix can be cheaper and better, so the ranking and the prefix search
// are skipped and the options are judged again at the ceiling (b2). A
// search that reuses a previous one's options starts at the ceiling.
absl::StatusOr<QualityTargetOutcome> TargetSearch::Run(
    JobState* state, MixedPrecisionOutcome* mp) {
  QualityTargetReport& report = outcome_.report;
  report.metric = MetricName(target_.metric);
  report.target = target_.value;
  selected_ = *state;
  selected_options_ = state->options;
  selected_mp_ = *mp;
  sensitivity_ = mp->sensitivity;
  PtqOptions options = state->options;
  const bool reuse = in_.reuse_options != nullptr;
  std::optional<Trial> best;
  // The 8-bit configuration with the options, which a reusing search
  // measures only when the ranking needs it.
  auto ensure_best = [&]() -> absl::Status {
    if (best.has_value()) return absl::OkStatus();
    ASSIGN_OR_RETURN(best, Try(options, {}, OptionsText()));
    return absl::OkStatus();
  };
  if (!reuse) {
    ASSIGN_OR_RETURN(best, Try(options, {}, "as configured"));
    report.baseline = best->figure;
    report.steps.back().kept = true;
    RETURN_IF_ERROR(TryOptions(&options, &*best));
  } else {
    ASSIGN_OR_RETURN(options, ReuseOptions(options));
  }
  if (best.has_value() && Met(best->figure)) {
    return Finish(*std::move(best), state, mp);
  }
  RETURN_IF_ERROR(Select(options));
  std::vector<BitUpgrade> ups =
      ListBitUpgrades(selected_, *in_.shapes, in_.spec->mixed_precision);
  // With a mixed-precision budget the ceiling is the longest ranked prefix
  // that keeps within it, so the ranking comes first.
  std::optional<std::vector<BitUpgrade>> ranked;
  const bool budget = HasBudget(selected_mp_.targets);
  if (budget && !ups.empty()) {
    RETURN_IF_ERROR(ensure_best());
    ASSIGN_OR_RETURN(ranked, RankedUpgrades(*best, std::move(ups)));
    ASSIGN_OR_RETURN(const size_t fit, UpgradesWithinBudget(*ranked));
    ranked->resize(fit);
    ups = *ranked;
    if (ups.empty()) {
      report.steps.push_back(
          {"no bit upgrade keeps within the mixed-precision budget",
           std::nullopt, false});
    }
  }
  if (ups.empty()) {
    if (!best.has_value()) {
      RETURN_IF_ERROR(ensure_best());
      report.steps.back().kept = true;
    }
    return Finish(*std::move(best), state, mp);
  }
  ASSIGN_OR_RETURN(
      Trial ceiling,
      Try(options, ups,
          absl::StrCat(Describe(ups), budget ? " (every upgrade within the "
                                               "mixed-precision budget)"
                                             : " (every upgrade)")));
  if (Met(ceiling.figure)) {
    report.steps.back().kept = true;
    RETURN_IF_ERROR(ensure_best());
    if (!ranked.has_value()) {
      ASSIGN_OR_RETURN(ranked, RankedUpgrades(*best, std::move(ups)));
    }
    std::vector<BitUpgrade> chosen;
    ASSIGN_OR_RETURN(Trial hit, UpgradeSearch(options, *std::move(ranked),
                                              std::move(ceiling), &chosen));
    RecordUpgrades(chosen);
    return Finish(std::move(hit), state, mp);
  }
  if (best.has_value() && best->figure >= ceiling.figure) {
    return Finish(*std::move(best), state, mp);
  }
  report.steps.back().kept = true;
  RecordUpgrades(ups);
  if (!reuse) RETURN_IF_ERROR(RevisitOptions(ups, &options, &ceiling));
  return Finish(std::move(ceiling), state, mp);
}

// The longest prefix of `ranked` whose configuration keeps within every
// resource target the mixed-precision request set (resource figures grow
// with the prefix: a bisection).
absl::StatusOr<size_t> TargetSearch::UpgradesWithinBudget(
    const std::vector<BitUpgrade>& ranked) {
  auto fits = [&](size_t k) -> absl::StatusOr<bool> {
    if (cancel_ != nullptr) RETURN_IF_ERROR(cancel_->Check());
    JobState s = selected_;
    if (k > 0) {
      const std::vector<BitUpgrade> prefix(ranked.begin(), ranked.begin() + k);
      RETURN_IF_ERROR(RunMixedPrecision(OverridesFor(prefix), kMpSimdPadding,
                                        *in_.shapes, *in_.calibration, &s,
                                        pool_, cancel_, nullptr)
                          .status());
    }
    return TargetOverrunWarnings(
               ComputeResourceUtilization(s, *in_.shapes, 0, kMpSimdPadding),
               selected_mp_.targets)
        .empty();
  };
  ASSIGN_OR_RETURN(const bool all, fits(ranked.size()));
  if (all) return ranked.size();
  size_t lo = 0, hi = ranked.size();  // lo fits (or is 0), hi does not
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    ASSIGN_OR_RETURN(const bool ok, fits(mid));
    (ok ? lo : hi) = mid;
  }
  return lo;
}

absl::StatusOr<QualityTargetOutcome> TargetSearch::Finish(
    Trial best, JobState* state, MixedPrecisionOutcome* mp) {
  outcome_.report.reached = best.figure;
  outcome_.report.met = Met(best.figure);
  for (const OptionEdit& e : kept_) outcome_.kept_options.push_back(e.name);
  outcome_.meter = meter_;
  *state = std::move(best.state);
  *mp = std::move(best.mixed_precision);
  return std::move(outcome_);
}

}  // namespace

std::string MetricName(QualityTargetOptions::Metric metric) {
  return metric == QualityTargetOptions::Metric::kCosine ? "cosine" : "sqnr";
}

bool TargetMet(const QualityTargetOptions& target, double figure) {
  return figure >= target.value;
}

double GainEpsilon(const QualityTargetOptions& target) {
  return target.metric == QualityTargetOptions::Metric::kCosine ? 1e-6 : 0.01;
}

bool SkipsTheTrial(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnimplemented ||
         status.code() == absl::StatusCode::kFailedPrecondition;
}

absl::StatusOr<QualityTargetOutcome> RunQualityTarget(
    const QualityTargetInputs& inputs, const JobState& calibrated,
    JobState* state, MixedPrecisionOutcome* mixed_precision, ThreadPool* pool,
    const CancellationToken* cancel, ProgressSink* progress) {
  ASSIGN_OR_RETURN(QualityMeter meter,
                   QualityMeter::Create(*inputs.float_model, *inputs.evaluation,
                                        pool, cancel));
  TargetSearch search(inputs, calibrated,
                      std::make_shared<const QualityMeter>(std::move(meter)),
                      pool, cancel, progress);
  return search.Run(state, mixed_precision);
}

absl::Status TargetOutOfReachError(const QualityTargetOptions& target,
                                   const std::string& tpc, double best,
                                   const std::string& how, double baseline) {
  const bool db = target.metric != QualityTargetOptions::Metric::kCosine;
  const auto fmt = [&](double v) {
    return db ? absl::StrFormat("%.2f dB", v) : absl::StrFormat("%.5f", v);
  };
  return absl::FailedPreconditionError(
      absl::StrCat("quality_target: ", MetricName(target.metric), " ",
                   fmt(target.value), " out of reach of ", tpc, ": best ",
                   fmt(best), " (", how, "); as configured ", fmt(baseline)));
}

}  // namespace quantd
