// MCTQ export: a float graph-IR Model + the job's decisions -> the
// Model that Sony MCT 2.3's PyTorch exporter writes in its default format,
// MCTQ (serialize it with ExportOnnx).
//
// The float ops stay as they are (after quantd's graph preparation, i.e. BN
// folding and MCT's substitutions); mct_quantizers 1.5.2 custom ops (domain
// "mct_quantizers", core/graph/mctq_ops.h) are inserted where MCT places its
// quantizers:
//   - every quantized activation tensor (graph input or node output) gets an
//     Activation{POT,Symmetric,Uniform}Quantizer right after its producer;
//     every consumer reads the quantized tensor; a quantized graph output
//     keeps its name (the producer's float tensor is renamed). Activations
//     that only preserve their input's quantization get none unless the TPC
//     asks for preserving quantizers.
//   - every quantized weight input becomes the output of a
//     Weights{POT,Symmetric,Uniform,LUTPOT,LUTSymmetric}Quantizer whose
//     input 0 is the float initializer and whose thresholds / ranges / LUT
//     values are float32 Constant nodes, placed before the consuming node.
// Attributes are exactly those of the ops' symbolic() in mct_quantizers
// 1.5.2 (including `mctq_version`); the model imports "mct_quantizers"
// version 1. LUT activations have no op in 1.5.2 (UNIMPLEMENTED).
#ifndef QUANTD_CORE_QDQ_MCTQ_EXPORT_H_
#define QUANTD_CORE_QDQ_MCTQ_EXPORT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/qdq/quantization_params.h"
#include "quantd/v1/tpc.pb.h"

namespace quantd {

// MCT's default ONNX opset for its exporter.
inline constexpr int64_t kMctqDefaultOpset = 15;

struct MctqExportOptions {
  // TPC insert_preserving_quantizers: quantize preserved tensors too.
  bool insert_preserving_quantizers = false;
  // metadata_props to write (MCT writes some only when the TPC's
  // add_metadata is set; see MctqMetadata).
  std::vector<std::pair<std::string, std::string>> metadata;
};

// The metadata_props MCT 2.3 adds for a TPC with add_metadata (the TPC's
// versions and mct_quantizers' version), in MCT's key order; empty when
// add_metadata is false.
std::vector<std::pair<std::string, std::string>> MctqMetadata(
    const v1::TargetPlatformCapabilities& tpc);

// The model must hold every node and initializer the decisions name
// (INVALID_ARGUMENT naming it otherwise). The default-domain opset is left
// as is: callers upgrade to kMctqDefaultOpset first, as MCT exports it.
absl::StatusOr<Model> BuildMctqModel(const Model& float_model,
                                     const ModelQuantization& quantization,
                                     const MctqExportOptions& options);

}  // namespace quantd

#endif  // QUANTD_CORE_QDQ_MCTQ_EXPORT_H_
