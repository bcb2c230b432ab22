#include "core/io/npy.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/io/file_util.h"
#include "core/util/status_macros.h"

namespace quantd {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;
// numpy leaves room to grow the first dimension in place (format.py).
constexpr size_t kGrowthAxisMaxDigits = 21;

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// A strict reader of the Python dict literal numpy writes, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(absl::string_view text, absl::string_view source)
      : text_(text), source_(source) {}

  absl::StatusOr<NpyHeader> Parse() {
    NpyHeader header;
    bool have_descr = false, have_fortran = false, have_shape = false;
    SkipSpace();
    if (!Consume('{')) return Error("header does not start with '{'");
    for (;;) {
      SkipSpace();
      if (Consume('}')) break;
      ASSIGN_OR_RETURN(std::string key, ParseString("key"));
      SkipSpace();
      if (!Consume(':')) return Error(absl::StrCat("no ':' after '", key, "'"));
      SkipSpace();
      if (key == "descr") {
        if (have_descr) return Error("duplicate key 'descr'");
        if (Peek() == '[') {
          return Error("structured dtypes (a list 'descr') are not supported");
        }
        ASSIGN_OR_RETURN(header.descr, ParseString("'descr'"));
        have_descr = true;
      } else if (key == "fortran_order") {
        if (have_fortran) return Error("duplicate key 'fortran_order'");
        ASSIGN_OR_RETURN(header.fortran_order, ParseBool());
        have_fortran = true;
      } else if (key == "shape") {
        if (have_shape) return Error("duplicate key 'shape'");
        ASSIGN_OR_RETURN(header.shape, ParseShape());
        have_shape = true;
      } else {
        return Error(absl::StrCat("unexpected key '", key, "'"));
      }
      SkipSpace();
      if (Consume(',')) continue;
      if (Consume('}')) break;
      return Error(absl::StrCat("expected ',' or '}' after '", key, "'"));
    }
    SkipSpace();
    if (pos_ != text_.size()) return Error("trailing characters after '}'");
    if (!have_descr) return Error("missing key 'descr'");
    if (!have_fortran) return Error("missing key 'fortran_order'");
    if (!have_shape) return Error("missing key 'shape'");
    return header;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(
        source_, ": malformed .npy header (", what, " at offset ", pos_, ")"));
  }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (Peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  absl::StatusOr<std::string> ParseString(absl::string_view what) {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') {
      return Error(absl::StrCat("expected a quoted string for ", what));
    }
    ++pos_;
    const size_t end = text_.find(quote, pos_);
    if (end == absl::string_view::npos) return Error("unterminated string");
    std::string out(text_.substr(pos_, end - pos_));
    if (out.find('\\') != std::string::npos) {
      return Error("escape sequences are not supported");
    }
    pos_ = end + 1;
    return out;
  }
  absl::StatusOr<bool> ParseBool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    return Error("'fortran_order' must be True or False");
  }
  absl::StatusOr<std::vector<int64_t>> ParseShape() {
    std::vector<int64_t> shape;
    if (!Consume('(')) return Error("'shape' must be a tuple");
    for (;;) {
      SkipSpace();
      if (Consume(')')) break;
      if (!absl::ascii_isdigit(Peek())) {
        return Error(
            "'shape' holds a value that is not a non-negative integer");
      }
      int64_t value = 0;
      while (absl::ascii_isdigit(Peek())) {
        if (value > (int64_t{1} << 56)) return Error("dimension too large");
        value = value * 10 + (text_[pos_++] - '0');
      }
      Consume('L');  // Python 2 long suffix
      shape.push_back(value);
      SkipSpace();
      if (Consume(',')) continue;
      if (Consume(')')) break;
      return Error("expected ',' or ')' in 'shape'");
    }
    return shape;
  }

  absl::string_view text_;
  absl::string_view source_;
  size_t pos_ = 0;
};

struct NpyType {
  DType dtype;
  bool big_endian;
};

absl::StatusOr<NpyType> ParseDescr(absl::string_view descr,
                                   absl::string_view source) {
  const absl::string_view full = descr;
  auto unsupported = [&]() {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": .npy dtype '", full,
        "' is not supported (float16/32/64, int8-64, uint8-64, bool are)"));
  };
  if (descr.size() < 2) return unsupported();
  bool big_endian = false;
  const char order = descr[0];
  if (order == '<' || order == '>' || order == '|' || order == '=') {
    big_endian = order == '>';
    descr.remove_prefix(1);
  }
  static const struct {
    const char* code;
    DType dtype;
  } kCodes[] = {
      {"f2", DType::kFloat16}, {"f4", DType::kFloat},  {"f8", DType::kDouble},
      {"i1", DType::kInt8},    {"i2", DType::kInt16},  {"i4", DType::kInt32},
      {"i8", DType::kInt64},   {"u1", DType::kUint8},  {"u2", DType::kUint16},
      {"u4", DType::kUint32},  {"u8", DType::kUint64}, {"b1", DType::kBool},
  };
  for (const auto& c : kCodes) {
    if (descr == c.code) return NpyType{c.dtype, big_endian};
  }
  return unsupported();
}

const char* DescrOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return "<f2";
    case DType::kFloat:
      return "<f4";
    case DType::kDouble:
      return "<f8";
    case DType::kInt8:
      return "|i1";
    case DType::kInt16:
      return "<i2";
    case DType::kInt32:
      return "<i4";
    case DType::kInt64:
      return "<i8";
    case DType::kUint8:
      return "|u1";
    case DType::kUint16:
      return "<u2";
    case DType::kUint32:
      return "<u4";
    case DType::kUint64:
      return "<u8";
    case DType::kBool:
      return "|b1";
    default:
      return nullptr;
  }
}

void SwapBytes(char* data, int64_t count, size_t size) {
  for (int64_t i = 0; i < count; ++i) {
    std::reverse(data + i * size, data + (i + 1) * size);
  }
}

// Column-major `src` -> row-major `dst` for `shape`.
void FortranToC(const char* src, char* dst, const std::vector<int64_t>& shape,
                size_t size) {
  const int rank = static_cast<int>(shape.size());
  std::vector<int64_t> c_strides(rank, 1);
  for (int a = rank - 2; a >= 0; --a)
    c_strides[a] = c_strides[a + 1] * shape[a + 1];
  const int64_t count = NumElements(shape);
  std::vector<int64_t> index(rank, 0);
  for (int64_t f = 0; f < count; ++f) {  // f walks Fortran order
    int64_t c = 0;
    for (int a = 0; a < rank; ++a) c += index[a] * c_strides[a];
    std::memcpy(dst + c * size, src + f * size, size);
    for (int a = 0; a < rank; ++a) {
      if (++index[a] < shape[a]) break;
      index[a] = 0;
    }
  }
}

uint32_t ReadLittle(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes,
                                absl::string_view source,
                                int64_t max_tensor_bytes) {
  if (bytes.size() < kMagicLen + 4 ||
      bytes.substr(0, kMagicLen) != absl::string_view(kMagic, kMagicLen)) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not a .npy file (no \\x93NUMPY magic)"));
  }
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  const int major = u[6];
  size_t prefix = 0;
  size_t header_len = 0;
  if (major == 1) {
    prefix = 10;
    header_len = ReadLittle(u + 8, 2);
  } else if (major == 2 || major == 3) {
    prefix = 12;
    if (bytes.size() < prefix) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": truncated .npy header"));
    }
    header_len = ReadLittle(u + 8, 4);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": unsupported .npy format version ", major, ".", u[7]));
  }
  if (header_len > bytes.size() - prefix) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": truncated .npy header (", header_len,
                     " bytes claimed, ", bytes.size() - prefix, " present)"));
  }
  // v1/v2 headers are latin-1, v3 UTF-8; the grammar we accept is ASCII.
  HeaderParser parser(bytes.substr(prefix, header_len), source);
  ASSIGN_OR_RETURN(NpyHeader header, parser.Parse());
  ASSIGN_OR_RETURN(NpyType type, ParseDescr(header.descr, source));

  const size_t elem = DTypeSize(type.dtype);
  const int64_t count = NumElements(header.shape);
  if (count < 0 ||
      (count > 0 && static_cast<uint64_t>(count) >
                        static_cast<uint64_t>(max_tensor_bytes) / elem)) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": .npy shape (", absl::StrJoin(header.shape, ", "), ") of ",
        header.descr, " exceeds the limit of ", max_tensor_bytes, " bytes"));
  }
  const size_t data_bytes = static_cast<size_t>(count) * elem;
  const size_t present = bytes.size() - prefix - header_len;
  if (present != data_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": .npy data has ", present, " bytes, shape (",
                     absl::StrJoin(header.shape, ", "), ") of ", header.descr,
                     " needs ", data_bytes));
  }
  ASSIGN_OR_RETURN(Tensor tensor,
                   Tensor::Create(type.dtype, header.shape, max_tensor_bytes));
  const char* src = bytes.data() + prefix + header_len;
  char* dst = static_cast<char*>(tensor.mutable_raw());
  if (header.fortran_order && header.shape.size() > 1) {
    FortranToC(src, dst, header.shape, elem);
  } else if (data_bytes > 0) {
    std::memcpy(dst, src, data_bytes);
  }
  if (type.big_endian && elem > 1) SwapBytes(dst, count, elem);
  if (type.dtype == DType::kBool) {
    for (int64_t i = 0; i < count; ++i) dst[i] = dst[i] != 0 ? 1 : 0;
  }
  return tensor;
}

absl::StatusOr<Tensor> ReadNpyFile(const std::string& path,
                                   int64_t max_tensor_bytes) {
  // A header is at most a few KiB beyond the data.
  ASSIGN_OR_RETURN(
      std::string bytes,
      ReadFileLimited(path, max_tensor_bytes + (int64_t{1} << 20)));
  return ParseNpy(bytes, path, max_tensor_bytes);
}

absl::StatusOr<std::string> SerializeNpy(const Tensor& tensor) {
  const char* descr = DescrOf(tensor.dtype());
  if (descr == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot write a ", DTypeName(tensor.dtype()), " tensor as .npy"));
  }
  const std::vector<int64_t>& shape = tensor.shape();
  std::string shape_text;
  if (shape.size() == 1) {
    shape_text = absl::StrCat("(", shape[0], ",)");
  } else {
    shape_text = absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
  }
  // Exactly numpy.lib.format._write_array_header: sorted keys, growth room
  // for the first dimension, then padding so the data is 64-byte aligned.
  std::string header =
      absl::StrCat("{'descr': '", descr,
                   "', 'fortran_order': False, 'shape': ", shape_text, ", }");
  if (!shape.empty()) {
    const size_t digits = absl::StrCat(shape[0]).size();
    if (digits < kGrowthAxisMaxDigits) {
      header.append(kGrowthAxisMaxDigits - digits, ' ');
    }
  }
  int major = 1;
  size_t prefix = kMagicLen + 2 + 2;
  size_t pad = kAlign - (prefix + header.size() + 1) % kAlign;
  if (header.size() + 1 + pad > 0xFFFF) {
    major = 2;
    prefix = kMagicLen + 2 + 4;
    pad = kAlign - (prefix + header.size() + 1) % kAlign;
  }
  header.append(pad, ' ');
  header.push_back('\n');

  std::string out(kMagic, kMagicLen);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  const uint32_t len = static_cast<uint32_t>(header.size());
  const int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) {
    out.push_back(static_cast<char>((len >> (8 * i)) & 0xFF));
  }
  out += header;
  if (tensor.byte_size() > 0) {
    out.append(static_cast<const char*>(tensor.raw()), tensor.byte_size());
  }
  return out;
}

absl::Status WriteNpyFile(const std::string& path, const Tensor& tensor) {
  auto bytes = SerializeNpy(tensor);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", bytes.status().message()));
  }
  return WriteFileAtomically(path, *bytes);
}

}  // namespace quantd
