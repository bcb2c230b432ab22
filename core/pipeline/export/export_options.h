// What a job asks of its exports (QuantizeRequest.export_options, resolved
// once by the job spec).
#ifndef QUANTD_CORE_PIPELINE_EXPORT_EXPORT_OPTIONS_H_
#define QUANTD_CORE_PIPELINE_EXPORT_EXPORT_OPTIONS_H_

namespace quantd {

// How 8-bit activations are stored in the QDQ model.
enum class ActivationStorage {
  // int8 (S8S8, as ONNX Runtime's own quantizer defaults to): ORT's
  // uint8-activation kernels saturate on x86 CPUs without VNNI.
  kInt8,
  kUint8,
  // uint8 where the grid is unsigned, int8 where it is signed.
  kAuto,
};

// How 8-bit weights are stored: uint8 for x86 CPUs whose ORT int8-weight
// fused kernels compute wrong sums (AVX2 without AVX-512BW or VNNI).
enum class WeightStorage { kInt8, kUint8 };

struct ExportOptions {
  bool qdq = true;    // the QDQ ONNX model
  bool mctq = false;  // MCT's MCTQ ONNX model
  // LUT weights snapped to a per-channel int8 grid (plain QDQ) instead of
  // indices + codebook.
  bool lut_snap_to_int8 = false;
  ActivationStorage activation_storage = ActivationStorage::kInt8;
  WeightStorage weight_storage = WeightStorage::kInt8;
};

}  // namespace quantd

#endif  // QUANTD_CORE_PIPELINE_EXPORT_EXPORT_OPTIONS_H_
