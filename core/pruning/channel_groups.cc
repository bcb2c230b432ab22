#include "core/pruning/channel_groups.h"

#include <algorithm>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace quantd::pruning {
namespace {

// Squared L2 norm of each slice of `kernel` along `axis`.
std::vector<double> SquaredNorms(const Tensor& kernel, int axis) {
  const int64_t channels = kernel.dim(axis);
  int64_t inner = 1;
  for (int d = axis + 1; d < kernel.rank(); ++d) inner *= kernel.dim(d);
  const int64_t outer = kernel.num_elements() / (channels * inner);
  std::vector<double> norms(channels, 0.0);
  const float* w = kernel.data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* p = w + (o * channels + c) * inner;
      double sum = 0;
      for (int64_t i = 0; i < inner; ++i) sum += double{p[i]} * p[i];
      norms[c] += sum;
    }
  }
  return norms;
}

}  // namespace

ChannelGroups GroupChannels(const std::vector<double>& traces,
                            const Tensor& kernel, int axis, int simd) {
  const int64_t channels = kernel.dim(axis);
  const double per_channel =
      static_cast<double>(kernel.num_elements()) / channels;
  const std::vector<double> norms = SquaredNorms(kernel, axis);
  std::vector<double> score(channels);
  for (int64_t c = 0; c < channels; ++c) {
    score[c] = traces[c] * norms[c] / per_channel;
  }
  std::vector<int64_t> order(channels);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return score[a] > score[b]; });
  ChannelGroups out;
  for (int64_t start = 0; start < channels; start += simd) {
    const int64_t end = std::min<int64_t>(start + simd, channels);
    std::vector<int64_t> g(order.begin() + start, order.begin() + end);
    double trace = 0, norm = 0;
    for (int64_t c : g) {
      trace += traces[c];
      norm += norms[c];
    }
    out.scores.push_back(trace * norm / (per_channel * g.size()));
    out.groups.push_back(std::move(g));
  }
  return out;
}

std::vector<int64_t> KeptChannels(const std::vector<ChannelGroups>& groups,
                                  const std::vector<int>& kept_groups) {
  std::vector<int64_t> kept(groups.size(), 0);
  for (size_t s = 0; s < groups.size(); ++s) {
    for (int g = 0; g < kept_groups[s]; ++g) {
      kept[s] += static_cast<int64_t>(groups[s].groups[g].size());
    }
  }
  return kept;
}

absl::StatusOr<std::vector<int>> GreedyKeptGroups(
    const std::vector<ChannelGroups>& groups, const PrunedWeightsMemory& memory,
    int64_t target_bytes) {
  std::vector<int> kept(groups.size(), 1);
  int64_t current = memory.Bytes(KeptChannels(groups, kept));
  if (current > target_bytes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "weights memory target ", target_bytes,
        " bytes is below the minimum that SIMD groups allow: ", current,
        " bytes with one group of SIMD-size channels kept in each of the ",
        groups.size(), " prunable layers (", memory.unpruned_bytes(),
        " bytes unpruned)"));
  }
  int last = -1;
  while (current < target_bytes) {
    int best = -1;
    for (size_t s = 0; s < groups.size(); ++s) {
      if (kept[s] >= static_cast<int>(groups[s].groups.size())) continue;
      if (best < 0 ||
          groups[s].scores[kept[s]] > groups[best].scores[kept[best]]) {
        best = static_cast<int>(s);
      }
    }
    if (best < 0) break;  // nothing left to unprune
    ++kept[best];
    last = best;
    current = memory.Bytes(KeptChannels(groups, kept));
  }
  if (current > target_bytes && last >= 0) --kept[last];
  return kept;
}

}  // namespace quantd::pruning
