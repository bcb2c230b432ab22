#include "core/pipeline/gptq/gptq_options.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace quantd {
namespace {

absl::Status PositiveRate(const char* field, double v) {
  if (!(v > 0) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gptq.", field, ": must be > 0, got ", v));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GptqOptions> ResolveGptqOptions(const v1::GptqConfig& c) {
  GptqOptions o;
  if (c.n_epochs() < 0 || c.n_epochs() > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("gptq.n_epochs: must be in [0, 1000], got ", c.n_epochs(),
                     " (0 = default 5)"));
  }
  if (c.n_epochs() > 0) o.n_epochs = c.n_epochs();
  if (c.has_learning_rate()) {
    if (auto st = PositiveRate("learning_rate", c.learning_rate()); !st.ok()) {
      return st;
    }
    o.lr_rounding = c.learning_rate();
  }
  if (c.has_learning_rate_rest()) {
    if (auto st = PositiveRate("learning_rate_rest", c.learning_rate_rest());
        !st.ok()) {
      return st;
    }
    o.lr_rest = c.learning_rate_rest();
  }
  if (c.has_learning_rate_bias()) {
    if (auto st = PositiveRate("learning_rate_bias", c.learning_rate_bias());
        !st.ok()) {
      return st;
    }
    o.lr_bias = c.learning_rate_bias();
  }
  switch (c.rounding_type()) {
    case v1::ROUNDING_TYPE_UNSPECIFIED:
    case v1::ROUNDING_TYPE_SOFT_QUANTIZER:
      o.rounding = v1::TRAINING_METHOD_SOFT_ROUNDING;
      break;
    case v1::ROUNDING_TYPE_STE:
      o.rounding = v1::TRAINING_METHOD_GPTQ_STE;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "gptq.rounding_type: unknown value ", c.rounding_type()));
  }
  if (c.has_train_bias()) o.train_bias = c.train_bias();
  if (c.has_regularization_factor()) {
    const double f = c.regularization_factor();
    if (!(f >= 0) || !std::isfinite(f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("gptq.regularization_factor: must be >= 0, got ", f));
    }
    o.regularization_factor = f;
  }
  // Block-wise reconstruction has one loss per block: MCT's Hessian-based
  // weighting across layers (and sample-layer attention) has nothing to
  // weigh. It needs activation Hessians (HessianMode.ACTIVATION); core/hessian
  // estimates the weights' ones, for HMSE thresholds (docs/gptq.md).
  if (c.has_use_hessian_based_weights() && c.use_hessian_based_weights()) {
    return absl::UnimplementedError(
        "gptq.use_hessian_based_weights is not implemented by this quantd "
        "version (leave it unset or false)");
  }
  if (c.has_gradual_activation_quantization()) {
    o.gradual_activation_quantization = c.gradual_activation_quantization();
  }
  if (c.max_samples() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("gptq.max_samples: must be >= 0, got ", c.max_samples()));
  }
  o.max_samples = c.max_samples();
  if (c.rows_per_block() < 0 || c.batch_rows() < 0) {
    return absl::InvalidArgumentError(
        "gptq.rows_per_block / gptq.batch_rows: must be >= 0");
  }
  if (c.rows_per_block() > 0) o.rows_per_block = c.rows_per_block();
  if (c.batch_rows() > 0) o.batch_rows = c.batch_rows();
  return o;
}

}  // namespace quantd
