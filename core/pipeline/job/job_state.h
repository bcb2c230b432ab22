// The state a PTQ job carries from stage to stage (internal to the
// pipeline): the prepared float model, one NodePlan per node (parallel to
// model.graph.nodes) and the statistics. Stages fill it in order:
// attach -> fusing/preserving/filters -> statistics -> selection ->
// shift-negative correction -> mixed precision -> corrections -> GPTQ. Results
// are plain C++ (quantization_params.h); export lowers them to the QdqPlan and
// the wire QuantizedGraph at the end.
#ifndef QUANTD_CORE_PIPELINE_JOB_JOB_STATE_H_
#define QUANTD_CORE_PIPELINE_JOB_JOB_STATE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/pipeline/job/ptq_options.h"
#include "core/pipeline/job/samples.h"
#include "core/qdq/quantization_params.h"
#include "core/quantizers/types.h"
#include "quantd/v1/quantized_graph.pb.h"
#include "quantd/v1/tpc.pb.h"

namespace quantd {

// One constant input of a node that its config quantizes.
struct WeightSlot {
  std::string attr;  // "kernel_attr", "bias_attr", "pos_attr"
  int input_index = 0;
  v1::AttributeQuantizationConfig config;
  // Output-channel axis for per-channel parameters (FrameworkInfo); -1 when
  // unknown (MCT then searches every axis).
  int channel_axis = -1;
};

struct NodePlan {
  std::string op_set;  // "" = no op set matched (default_qco)
  v1::QuantizationConfigOptions qco;
  int candidate_index = 0;
  v1::OpQuantizationConfig config;    // the chosen (base) configuration
  std::string fused_group;            // "" when not fused
  bool fused_inner = false;           // inside a group, not its last node
  bool quantize_activation = false;   // output 0 quantized at this node
  bool preserving = false;            // output reuses the input's params
  std::string preserved_from;         // tensor whose params are reused
  std::optional<bool> forced_signed;  // TPC signedness SIGNED/UNSIGNED
  // FrameworkInfo's known output range (both set = bounded).
  std::optional<double> known_min, known_max;
  // FrameworkInfo's lower bound even when the range is open above
  // (HardSwish: -3/8): what shift-negative correction shifts by at most.
  std::optional<double> known_lower_bound;
  // Shift-negative correction's Add: the threshold every candidate keeps
  // (MCT sets it on each of the Add's candidates); mixed precision changes
  // only its bits.
  std::optional<double> fixed_threshold;
  std::string float_reason;
  std::vector<WeightSlot> weights;
  // Results.
  ActivationParams activation;
  // Outputs 1.. of a multi-output node (Split, LSTM, TopK values, ...):
  // quantized with the same config (reusing the input's parameters when
  // preserving); filled by parameter selection, in output order.
  std::vector<ActivationParams> extra_activations;
  std::vector<WeightParams> weight_results;
  // Output-channel axis of the node's output (for per-channel means).
  int output_channel_axis = 1;
};

struct TensorStats {
  quantizers::Histogram histogram;  // merged over samples
  double min = 0, max = 0;
};

// GPTQ's effect on one kernel block: the block output's SQNR against float
// on the sampled calibration positions, with the PTQ weights and with the
// trained ones (applied only when better).
struct GptqLayerError {
  std::string node;
  double sqnr_before_db = 0, sqnr_after_db = 0;
  int steps = 0;
  bool applied = false;
};

struct JobState {
  Model model;  // prepared float model the plans refer to
  std::vector<NodePlan> plans;
  // Graph inputs that are quantized (the model's first quantized consumer
  // decides, MCT quantizes the input layer's output).
  std::map<std::string, ActivationParams> input_activations;
  // The configuration graph inputs are quantized with (the TPC's default
  // config, as MCT's input layer); unset = inputs stay float.
  std::optional<v1::OpQuantizationConfig> input_config;
  std::vector<v1::FusedGroup> fused_groups;
  // Per quantized tensor (activation) statistics.
  std::map<std::string, TensorStats> stats;
  // Per-channel mean of the tensor feeding a kernel node (bias correction),
  // keyed by tensor name.
  std::map<std::string, std::vector<double>> input_means;
  PtqOptions options;
  std::vector<std::string> warnings;
  // Of the warnings, the request's node filters that matched no node
  // (QuantizeRequest.strict makes them errors).
  std::vector<std::string> unmatched_filters;
  std::vector<GptqLayerError> gptq_layers;  // empty unless GPTQ ran
};

// Every node's weight parameters as one parameter selection chose them for
// the plans' base configs (before shift-negative correction and mixed
// precision change any), and the options they were chosen with. A search
// that selects again on the same graph and plans with options that only
// change the activations' parameters (z_threshold, shift-negative
// correction's search) takes these instead of searching every weight again
// (SelectAllParams).
struct WeightSelectionCache {
  std::optional<PtqOptions> options;  // unset: nothing selected yet
  std::vector<std::vector<WeightParams>> per_node;
};

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_JOB_JOB_STATE_H_
