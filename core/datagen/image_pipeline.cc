#include "core/datagen/image_pipeline.h"

#include <algorithm>
#include <cmath>

namespace quantd::datagen {
namespace {

// out = k (*) in, zero padding 1 (symmetric kernel: also its own adjoint).
void Smooth3(const std::vector<float>& k, int64_t planes, int64_t h, int64_t w,
             const float* in, float* out) {
  for (int64_t c = 0; c < planes; ++c) {
    const float* src = in + c * h * w;
    float* dst = out + c * h * w;
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = 0; j < w; ++j) {
        float s = 0;
        for (int a = -1; a <= 1; ++a) {
          const int64_t r = i + a;
          if (r < 0 || r >= h) continue;
          for (int b = -1; b <= 1; ++b) {
            const int64_t q = j + b;
            if (q >= 0 && q < w) s += k[(a + 1) * 3 + b + 1] * src[r * w + q];
          }
        }
        dst[i * w + j] = s;
      }
    }
  }
}

void FlipRows(int64_t planes, int64_t h, int64_t w, float* p) {
  for (int64_t r = 0; r < planes * h; ++r)
    std::reverse(p + r * w, p + r * w + w);
}

void Clip(const ImageGeometry& g, float* x) {
  if (g.lo.empty()) return;
  const int64_t area = g.height * g.width;
  for (int64_t c = 0; c < g.channels; ++c) {
    const size_t k = g.lo.size() == 1 ? 0 : static_cast<size_t>(c);
    const float lo = g.lo[k], hi = g.hi[k];
    for (int64_t i = 0; i < area; ++i) {
      x[c * area + i] = std::min(std::max(x[c * area + i], lo), hi);
    }
  }
}

void Crop(const ImageGeometry& g, int64_t top, int64_t left, const float* s,
          float* x) {
  const int64_t ph = g.padded_h(), pw = g.padded_w();
  for (int64_t c = 0; c < g.channels; ++c) {
    for (int64_t i = 0; i < g.height; ++i) {
      const float* row = s + (c * ph + top + i) * pw + left;
      std::copy(row, row + g.width, x + (c * g.height + i) * g.width);
    }
  }
}

const std::vector<float>& Kernel() {
  static const auto* k = new std::vector<float>(GaussianKernel3(1.25));
  return *k;
}

}  // namespace

std::vector<float> GaussianKernel3(double sigma) {
  std::vector<float> k(9);
  double sum = 0;
  for (int a = -1; a <= 1; ++a) {
    for (int b = -1; b <= 1; ++b) {
      const double v = std::exp(-(a * a + b * b) / (2 * sigma * sigma));
      k[(a + 1) * 3 + b + 1] = static_cast<float>(v);
      sum += v;
    }
  }
  for (float& v : k) v = static_cast<float>(v / sum);
  return k;
}

void PipelineForward(const ImageGeometry& g, const Augmentation& a,
                     const float* p, float* x, std::vector<float>* scratch) {
  const int64_t ph = g.padded_h(), pw = g.padded_w();
  scratch->resize(2 * g.padded_size());
  float* flipped = scratch->data();
  float* smoothed = flipped + g.padded_size();
  std::copy(p, p + g.padded_size(), flipped);
  if (a.flip) FlipRows(g.channels, ph, pw, flipped);
  if (g.smoothing) {
    Smooth3(Kernel(), g.channels, ph, pw, flipped, smoothed);
  } else {
    std::copy(flipped, flipped + g.padded_size(), smoothed);
  }
  Crop(g, a.top, a.left, smoothed, x);
  Clip(g, x);
}

void PipelineBackward(const ImageGeometry& g, const Augmentation& a,
                      const float* dx, float* dp, std::vector<float>* scratch) {
  const int64_t ph = g.padded_h(), pw = g.padded_w();
  scratch->assign(g.padded_size(), 0.0f);
  float* ds = scratch->data();
  for (int64_t c = 0; c < g.channels; ++c) {
    for (int64_t i = 0; i < g.height; ++i) {
      const float* row = dx + (c * g.height + i) * g.width;
      std::copy(row, row + g.width, ds + (c * ph + a.top + i) * pw + a.left);
    }
  }
  if (g.smoothing) {
    Smooth3(Kernel(), g.channels, ph, pw, ds, dp);
  } else {
    std::copy(ds, ds + g.padded_size(), dp);
  }
  if (a.flip) FlipRows(g.channels, ph, pw, dp);
}

void PipelineFinalize(const ImageGeometry& g, const float* p, float* x) {
  std::vector<float> smoothed(p, p + g.padded_size());
  if (g.smoothing) {
    Smooth3(Kernel(), g.channels, g.padded_h(), g.padded_w(), p,
            smoothed.data());
  }
  // torchvision CenterCrop: round((H - h) / 2).
  const int64_t top = static_cast<int64_t>(std::lround(g.extra / 2.0));
  Crop(g, top, top, smoothed.data(), x);
  Clip(g, x);
}

}  // namespace quantd::datagen
