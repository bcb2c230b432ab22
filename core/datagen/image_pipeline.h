// MCT's SMOOTHING_AND_AUGMENTATION image pipeline on one image [C, H, W]:
// the optimised image is `extra` pixels larger; each step sees
// clip(crop(smooth(flip(p)))) with a random flip and crop, the result is
// clip(center_crop(smooth(p))). Clipping passes gradients straight through
// (MCT clamps in place under no_grad).
#ifndef QUANTD_CORE_DATAGEN_IMAGE_PIPELINE_H_
#define QUANTD_CORE_DATAGEN_IMAGE_PIPELINE_H_

#include <cstdint>
#include <vector>

namespace quantd::datagen {

struct ImageGeometry {
  int64_t channels = 3, height = 1, width = 1;  // what the model sees
  int64_t extra = 0;
  bool smoothing = true;
  std::vector<float> lo, hi;  // per channel; empty: no clipping
  int64_t padded_h() const { return height + extra; }
  int64_t padded_w() const { return width + extra; }
  int64_t padded_size() const { return channels * padded_h() * padded_w(); }
  int64_t size() const { return channels * height * width; }
};

struct Augmentation {
  bool flip = false;
  int64_t top = 0, left = 0;  // crop offset in [0, extra]
};

// The 3x3 Gaussian of MCT's Smoothing (sigma 1.25), normalised to sum 1.
std::vector<float> GaussianKernel3(double sigma);

// x [C, H, W] from p [C, H+e, W+e]; scratch sized padded_size().
void PipelineForward(const ImageGeometry& g, const Augmentation& a,
                     const float* p, float* x, std::vector<float>* scratch);
// dp [C, H+e, W+e] (overwritten) from dx [C, H, W].
void PipelineBackward(const ImageGeometry& g, const Augmentation& a,
                      const float* dx, float* dp, std::vector<float>* scratch);
// The final sample: centre crop, no flip.
void PipelineFinalize(const ImageGeometry& g, const float* p, float* x);

}  // namespace quantd::datagen

#endif  // QUANTD_CORE_DATAGEN_IMAGE_PIPELINE_H_
