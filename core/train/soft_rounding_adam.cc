#include "core/train/soft_rounding_adam.h"

#include <cmath>
#include <utility>

#include "core/train/for_each_element.h"

namespace quantd::train {
namespace {

namespace ei = Eigen::internal;
using Packet = ei::packet_traits<float>::type;
constexpr int64_t kLanes = ei::packet_traits<float>::size;
// Buffers are padded to this many floats (a whole number of packets of any
// width Eigen uses); kElementsPerChunk is a multiple of it.
constexpr int64_t kPad = 16;
static_assert(kPad % kLanes == 0 && kElementsPerChunk % kPad == 0);

Packet Set(double v) { return ei::pset1<Packet>(static_cast<float>(v)); }

// Packets [b, e) of the padded buffers, on `pool`: chunks of whole packets.
template <typename Fn>
void ForEachPacket(ThreadPool* pool, int64_t padded, const Fn& fn) {
  ParallelForChunks(pool, padded, kElementsPerChunk, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; i += kLanes) fn(i);
  });
}

}  // namespace

SoftRoundingAdam::SoftRoundingAdam(const WeightGridSpec& spec, QuantGrid grid,
                                   const std::vector<double>& w,
                                   double learning_rate, ThreadPool* pool)
    : spec_(spec),
      grid_(std::move(grid)),
      size_(static_cast<int64_t>(w.size())),
      lr_(learning_rate) {
  const int64_t padded = (size_ + kPad - 1) / kPad * kPad;
  for (Buffer* b : {&floor_, &scale_, &zero_point_, &v_, &sigmoid_, &m_, &s_,
                    &wq_, &grad_}) {
    b->assign(padded, 0.0f);
  }
  for (int64_t i = 0; i < size_; ++i) {
    const int64_t c = grid_.ChannelOf(i);
    // As SoftRoundingQuantizer: V such that h(V) is the fractional part.
    const double x = w[i] / grid_.scale[c] + grid_.zero_point[c];
    const double f = std::floor(x), r = x - f;
    floor_[i] = static_cast<float>(f);
    scale_[i] = static_cast<float>(grid_.scale[c]);
    zero_point_[i] = static_cast<float>(grid_.zero_point[c]);
    v_[i] = static_cast<float>(
        -std::log((kSoftZeta - kSoftGamma) / (r - kSoftGamma) - 1));
  }
  Update(/*adam=*/false, 0, 0, pool);
}

void SoftRoundingAdam::Step(double factor, double beta, ThreadPool* pool) {
  Update(/*adam=*/true, factor, beta, pool);
}

void SoftRoundingAdam::Update(bool adam, double factor, double beta,
                              ThreadPool* pool) {
  const bool first = !adam;
  const bool regularize = factor > 0 && beta > 0;
  const Packet zero = ei::pzero(Set(0)), one = Set(1), two = Set(2),
               minus_two = Set(-2), gamma = Set(kSoftGamma),
               width = Set(kSoftZeta - kSoftGamma), qmin = Set(grid_.qmin),
               qmax = Set(grid_.qmax), reg_scale = Set(-factor * beta),
               beta_m1 = Set(beta - 1);
  // Adam (torch defaults), bias corrections of this step.
  constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;
  if (!first) ++t_;
  const double t = static_cast<double>(t_);
  const Packet b1 = Set(kBeta1), b1c = Set(1 - kBeta1), b2 = Set(kBeta2),
               b2c = Set(1 - kBeta2), eps = Set(kEps), lr = Set(lr_),
               c1 = Set(first ? 1 : 1 - std::pow(kBeta1, t)),
               c2 = Set(first ? 1 : 1 - std::pow(kBeta2, t));
  ForEachPacket(pool, static_cast<int64_t>(v_.size()), [&](int64_t i) {
    Packet v = ei::ploadu<Packet>(&v_[i]);
    const Packet scale = ei::ploadu<Packet>(&scale_[i]);
    if (!first) {
      const Packet s = ei::ploadu<Packet>(&sigmoid_[i]);
      // dh/dV = s (1 - s) (zeta - gamma) inside (0, 1), 0 where clipped.
      const Packet hr = ei::pmadd(s, width, gamma);
      const Packet inside =
          ei::pand(ei::pcmp_lt(zero, hr), ei::pcmp_lt(hr, one));
      const Packet dh = ei::pselect(
          inside, ei::pmul(ei::pmul(s, ei::psub(one, s)), width), zero);
      Packet g = ei::pmul(ei::pmul(ei::ploadu<Packet>(&grad_[i]), scale), dh);
      if (regularize) {
        // factor * d/dV (1 - |u|^beta), u = 2h - 1:
        // -factor * beta * |u|^(beta - 1) * 2 sign(u) * dh.
        const Packet u =
            ei::psub(ei::pmul(two, ei::pmin(ei::pmax(hr, zero), one)), one);
        const Packet pw = ei::pexp(ei::pmul(beta_m1, ei::plog(ei::pabs(u))));
        const Packet sign = ei::pselect(ei::pcmp_lt(zero, u), two, minus_two);
        g = ei::padd(g, ei::pmul(ei::pmul(reg_scale, pw), ei::pmul(sign, dh)));
      }
      const Packet m =
          ei::pmadd(b1, ei::ploadu<Packet>(&m_[i]), ei::pmul(b1c, g));
      const Packet sq = ei::pmadd(b2, ei::ploadu<Packet>(&s_[i]),
                                  ei::pmul(b2c, ei::pmul(g, g)));
      ei::pstoreu(&m_[i], m);
      ei::pstoreu(&s_[i], sq);
      v = ei::psub(v, ei::pdiv(ei::pmul(lr, ei::pdiv(m, c1)),
                               ei::padd(ei::psqrt(ei::pdiv(sq, c2)), eps)));
      ei::pstoreu(&v_[i], v);
    }
    // The new weights: sigmoid(V), h, the grid level clipped, dequantized.
    const Packet s = ei::pdiv(one, ei::padd(one, ei::pexp(ei::pnegate(v))));
    ei::pstoreu(&sigmoid_[i], s);
    const Packet h = ei::pmin(ei::pmax(ei::pmadd(s, width, gamma), zero), one);
    const Packet q = ei::pmin(
        ei::pmax(ei::padd(ei::ploadu<Packet>(&floor_[i]), h), qmin), qmax);
    ei::pstoreu(
        &wq_[i],
        ei::pmul(scale, ei::psub(q, ei::ploadu<Packet>(&zero_point_[i]))));
  });
}

FixedWeights SoftRoundingAdam::Convert() const {
  std::vector<int32_t> ints(size_);
  for (int64_t i = 0; i < size_; ++i) {
    const double level = floor_[i] + (v_[i] >= 0 ? 1 : 0);
    ints[i] =
        static_cast<int32_t>(std::min(std::max(level, grid_.qmin), grid_.qmax));
  }
  return FixedWeightsOnGrid(spec_, grid_, std::move(ints));
}

}  // namespace quantd::train
