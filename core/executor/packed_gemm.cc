#include "core/executor/packed_gemm.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/executor/blocked_gemm.h"
#include "core/executor/im2col_packing.h"
#include "core/executor/im2col_panels_avx512.h"

// The sequence below is general_matrix_matrix_product's sequential path
// (Eigen/src/Core/products/GeneralMatrixMatrix.h) of Eigen 3.4.
static_assert(EIGEN_WORLD_VERSION == 3 && EIGEN_MAJOR_VERSION == 4,
              "packed_gemm.cc follows Eigen 3.4's GEMM");

namespace quantd::exec {
namespace {

namespace ei = ::Eigen::internal;
using Index = Eigen::Index;
using Traits = ei::gebp_traits<float, float>;
using LhsMapper = ei::const_blas_data_mapper<float, Index, Eigen::ColMajor>;
using RhsMapper = ei::const_blas_data_mapper<float, Index, Eigen::ColMajor>;
using PackLhs =
    ei::gemm_pack_lhs<float, Index, LhsMapper, Traits::mr, Traits::LhsProgress,
                      Traits::LhsPacket4Packing, Eigen::ColMajor>;
static_assert(Traits::mr == 24 && Traits::LhsProgress == 8,
              "Im2ColPacker stores gemm_pack_lhs<24, 8>'s AVX2 layout");
using PackRhs =
    ei::gemm_pack_rhs<float, Index, RhsMapper, Traits::nr, Eigen::ColMajor>;

// Packed blocks and the lhs buffer start on 64-byte boundaries (the micro
// kernel loads its packed lhs with aligned loads).
constexpr int64_t kAlignFloats = 16;
int64_t RoundUp(int64_t n) {
  return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
}

// A float buffer on a 64-byte boundary.
class AlignedFloats {
 public:
  void Resize(int64_t n) {
    if (n <= size_) return;
    storage_.assign(static_cast<size_t>(n + kAlignFloats), 0.0f);
    size_ = n;
  }
  float* data() { return Aligned(storage_.data()); }
  const float* data() const {
    return Aligned(const_cast<float*>(storage_.data()));
  }

 private:
  static float* Aligned(float* p) {
    auto a = reinterpret_cast<uintptr_t>(p);
    return reinterpret_cast<float*>((a + 63) & ~uintptr_t{63});
  }
  std::vector<float> storage_;
  int64_t size_ = 0;
};

// The cache's bounds: the row ranges of one blocking partition the kernel,
// so twice its bytes hold two blockings (a layer's two tile widths); the
// count bounds the map (pool workers' 64-row blocks of a 1280-row layer are
// 20 ranges).
constexpr size_t kMaxCachedBlocks = 64;
constexpr int64_t kSlackBytes = int64_t{64} << 10;

constexpr std::ptrdiff_t kPinnedL1Bytes = 48 << 10;
constexpr std::ptrdiff_t kPinnedL2Bytes = 1 << 20;
constexpr std::ptrdiff_t kPinnedL3Bytes = std::ptrdiff_t{384} << 20;

// Before main, before any product.
[[maybe_unused]] const bool kCacheSizesPinnedAtLoad = [] {
  PinGemmCacheSizes();
  return true;
}();

}  // namespace

// Eigen sizes its GEMM blocks (kc, mc, nc) from the cache sizes CPUID
// reports, read at the first product, and the blocks set the order of each
// output's additions: left alone, one request would give other bits on a
// replica with other caches. These are the sizes Eigen reads on the
// machine kind quantd is measured on (2-core x86_64: L1 48 KiB, L2 1 MiB,
// L3 384 MiB as CPUID reports it).
void PinGemmCacheSizes() {
  Eigen::setCpuCacheSizes(kPinnedL1Bytes, kPinnedL2Bytes, kPinnedL3Bytes);
}

// One row range's W^T blocks under one blocking, in the (k2, j2) order of
// the product's loops.
struct PackedWeights::Blocks {
  AlignedFloats buffer;
  std::vector<int64_t> offsets;  // per (k2 block, j2 block), row-major
};

PackedWeights::PackedWeights(const float* w, int64_t total_rows, int64_t depth)
    : w_(w), total_rows_(total_rows), depth_(depth) {}

PackedWeights::~PackedWeights() = default;

const PackedWeights::Blocks* PackedWeights::BlocksFor(int64_t row0,
                                                      int64_t rows, int64_t kc,
                                                      int64_t nc) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Key key{row0, rows, kc, nc};
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second.get();
  if (cache_.size() >= kMaxCachedBlocks) return nullptr;
  // The blocks of W[row0, row0 + rows) in the product's (k2, j2) order,
  // each on its own aligned offset.
  struct Block {
    int64_t k2, j2, depth, cols;
  };
  std::vector<Block> blocks;
  auto b = std::make_unique<Blocks>();
  int64_t total = 0;
  for (int64_t k2 = 0; k2 < depth_; k2 += kc) {
    for (int64_t j2 = 0; j2 < rows; j2 += nc) {
      blocks.push_back({k2, j2, std::min(k2 + kc, depth_) - k2,
                        std::min(j2 + nc, rows) - j2});
      b->offsets.push_back(total);
      total += RoundUp(blocks.back().depth * blocks.back().cols);
    }
  }
  const int64_t bytes = total * static_cast<int64_t>(sizeof(float));
  const int64_t limit =
      2 * total_rows_ * depth_ * static_cast<int64_t>(sizeof(float)) +
      kSlackBytes;
  if (held_bytes_ + bytes > limit) return nullptr;
  held_bytes_ += bytes;
  b->buffer.Resize(total);
  // W[row0, row0 + rows) as Eigen's column-major rhs W^T: [depth x rows].
  const RhsMapper rhs(w_ + row0 * depth_, depth_);
  PackRhs pack;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Block& k = blocks[i];
    pack(b->buffer.data() + b->offsets[i], rhs.getSubMapper(k.k2, k.j2),
         k.depth, k.cols);
  }
  return cache_.emplace(key, std::move(b)).first->second.get();
}

bool PackedWeights::Multiply(int64_t row0, int64_t rows, const float* x,
                             int64_t ldx, int64_t width, float* y, int64_t ldy,
                             bool accumulate) const {
  const LhsMapper lhs(x, ldx);
  return MultiplyFrom(
      row0, rows,
      [&lhs](float* a, int64_t i2, int64_t k2, int64_t depth, int64_t cols) {
        PackLhs()(a, lhs.getSubMapper(i2, k2), depth, cols);
      },
      width, y, ldy, accumulate);
}

bool PackedWeights::MultiplyIm2Col(int64_t row0, int64_t rows,
                                   const Im2ColSource& src, int64_t width,
                                   float* y, int64_t ldy,
                                   bool accumulate) const {
  if (src.channels * src.KH * src.KW != depth_ || width < 1) return false;
  const Im2ColPacker packer(src, width);
  // Where the kernel takes the layer, the full panels' positions come
  // straight from the image (im2col_panels_avx512.h): only the rows left
  // over in each row block are packed, for Eigen's kernel.
  const bool from_image = Im2ColPanels::Takes(src);
  return MultiplyFrom(
      row0, rows,
      [&packer](float* a, int64_t i2, int64_t k2, int64_t depth, int64_t cols) {
        packer.Pack(a, i2, k2, depth, cols);
      },
      width, y, ldy, accumulate, from_image ? &src : nullptr);
}

template <typename PackX>
bool PackedWeights::MultiplyFrom(int64_t row0, int64_t rows,
                                 const PackX& pack_x, int64_t width, float* y,
                                 int64_t ldy, bool accumulate,
                                 const Im2ColSource* image) const {
  // Column-major view: Y^T [width x rows] += X^T [width x depth] * W^T.
  const EigenGemmPlan plan = PlanEigenGemm<float>(rows, width, depth_);
  if (!plan.blocked || row0 < 0 || row0 + rows > total_rows_) return false;
  const int64_t kc = plan.kc, mc = plan.mc, nc = plan.nc;
  const Blocks* b = BlocksFor(row0, rows, kc, nc);
  if (b == nullptr) return false;
  if (!accumulate) ZeroRows(y, rows, width, ldy);
  thread_local AlignedFloats block_a;
  block_a.Resize(kc * mc);
  float* a = block_a.data();
  for (int64_t i2 = 0; i2 < width; i2 += mc) {
    const int64_t amc = std::min(i2 + mc, width) - i2;
    int64_t block = 0;
    // Rows of the block's 3- and 2-packet panels read from the image, if
    // any, laid out once for every depth and column block.
    const int64_t direct = image != nullptr ? Im2ColPanels::Rows(amc) : 0;
    std::optional<Im2ColPanels> panels;
    if (direct > 0) panels.emplace(*image, i2, direct);
    for (int64_t k2 = 0; k2 < depth_; k2 += kc) {
      const int64_t akc = std::min(k2 + kc, depth_) - k2;
      if (direct < amc) pack_x(a, i2 + direct, k2, akc, amc - direct);
      for (int64_t j2 = 0; j2 < rows; j2 += nc) {
        const int64_t anc = std::min(j2 + nc, rows) - j2;
        const float* w = b->buffer.data() + b->offsets[block++];
        // Y^T's block (i2, j2): column-major, stride ldy.
        if (panels.has_value())
          panels->Multiply(k2, akc, w, anc, y + j2 * ldy, ldy);
        if (direct < amc) {
          MultiplyPackedBlock<float>(a, w, amc - direct, akc, anc, 1.0f,
                                     y + i2 + direct + j2 * ldy, ldy);
        }
      }
    }
  }
  return true;
}

int64_t PackedWeights::packed_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_bytes_;
}

}  // namespace quantd::exec
