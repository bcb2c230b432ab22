// NumPy `.npy` files <-> Tensor.
//
// Reads format versions 1.0, 2.0 and 3.0, either byte order, C or Fortran
// order (Fortran data is transposed to the row-major layout Tensor uses), and
// the dtypes float16/32/64, int8/16/32/64, uint8/16/32/64 and bool. The bytes
// are untrusted: the header is parsed strictly, the claimed size is checked
// against `max_tensor_bytes` and against the bytes actually present before
// anything is allocated, and every error names the file (or "npy" for bytes).
//
//   ASSIGN_OR_RETURN(Tensor t, ReadNpyFile("samples/s0/input.npy"));
//   RETURN_IF_ERROR(WriteNpyFile("out/s0/logits.npy", logits));
//
// Writing produces version 1.0 (2.0 when the header needs it), little-endian,
// C order, the header padded so the data starts on a 64-byte boundary, i.e.
// byte-for-byte what numpy.save writes.
#ifndef QUANTD_CORE_IO_NPY_H_
#define QUANTD_CORE_IO_NPY_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/graph/tensor.h"

namespace quantd {

inline constexpr int64_t kDefaultMaxSampleTensorBytes = int64_t{1} << 31;

// Parses the bytes of a .npy file; `source` names it in error messages.
absl::StatusOr<Tensor> ParseNpy(
    absl::string_view bytes, absl::string_view source = "npy",
    int64_t max_tensor_bytes = kDefaultMaxSampleTensorBytes);

// Reads a file (its size is checked before it is read).
absl::StatusOr<Tensor> ReadNpyFile(
    const std::string& path,
    int64_t max_tensor_bytes = kDefaultMaxSampleTensorBytes);

// The .npy bytes for `tensor` (any storable dtype except bfloat16, which
// numpy has no code for).
absl::StatusOr<std::string> SerializeNpy(const Tensor& tensor);

// Writes atomically enough for our use: to PATH.tmp, then renamed.
absl::Status WriteNpyFile(const std::string& path, const Tensor& tensor);

}  // namespace quantd

#endif  // QUANTD_CORE_IO_NPY_H_
