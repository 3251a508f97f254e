#include "core/train/grad_clip.h"

#include <cmath>
#include <string>

#include "kernels/error.h"

namespace fp8rl::train {

double global_grad_norm(const std::vector<ParamSlot>& slots) {
  check_param_slots(slots, {}, "global_grad_norm");
  double sum = 0.0;
  for (const ParamSlot& s : slots) {
    for (size_t i = 0; i < s.size; ++i) {
      const double g = s.grad[i];
      sum += g * g;
    }
  }
  return std::sqrt(sum);
}

namespace {

void check_max_norm(double max_norm) {
  require(std::isfinite(max_norm) && max_norm > 0.0,
          "clip_grad_norm: max_norm must be finite and > 0, got " + std::to_string(max_norm));
}

}  // namespace

GradClipResult clip_grad_norm(const std::vector<ParamSlot>& slots, double max_norm) {
  check_max_norm(max_norm);  // before the slots are looked at
  return clip_for_norm(global_grad_norm(slots), max_norm);
}

GradClipResult clip_for_norm(double norm, double max_norm) {
  check_max_norm(max_norm);
  GradClipResult result;
  result.norm = norm;
  result.finite = std::isfinite(result.norm);
  if (!result.finite) return result;
  const double coef = max_norm / (result.norm + 1e-6);
  if (coef < 1.0) {
    result.scale = static_cast<float>(coef);
    result.clipped = true;
  }
  return result;
}

void scale_gradients(const std::vector<FloatSpan>& grads, float scale) {
  require(std::isfinite(scale), "scale_gradients: scale must be finite");
  for (size_t k = 0; k < grads.size(); ++k) {
    require(grads[k].size == 0 || grads[k].data != nullptr,
            "scale_gradients: gradient " + std::to_string(k) + " is null");
    for (size_t i = 0; i < grads[k].size; ++i) grads[k].data[i] *= scale;
  }
}

}  // namespace fp8rl::train
