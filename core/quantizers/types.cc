#include "core/quantizers/types.h"

namespace quantd::quantizers {

const char* QuantizationMethodName(QuantizationMethod method) {
  switch (method) {
    case QuantizationMethod::kPowerOfTwo:
      return "POWER_OF_TWO";
    case QuantizationMethod::kLutPot:
      return "LUT_POT_QUANTIZER";
    case QuantizationMethod::kSymmetric:
      return "SYMMETRIC";
    case QuantizationMethod::kUniform:
      return "UNIFORM";
    case QuantizationMethod::kLutSym:
      return "LUT_SYM_QUANTIZER";
  }
  return "UNKNOWN";
}

const char* ErrorMethodName(ErrorMethod method) {
  switch (method) {
    case ErrorMethod::kNoClipping:
      return "NOCLIPPING";
    case ErrorMethod::kMse:
      return "MSE";
    case ErrorMethod::kMae:
      return "MAE";
    case ErrorMethod::kKl:
      return "KL";
    case ErrorMethod::kLp:
      return "LP";
    case ErrorMethod::kHmse:
      return "HMSE";
  }
  return "UNKNOWN";
}

}  // namespace quantd::quantizers
