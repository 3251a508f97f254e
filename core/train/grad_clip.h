// Global gradient-norm clipping, as torch.nn.utils.clip_grad_norm_ (L2 norm):
//   norm  = sqrt(sum over slots, in slot order, of sum over elements, in index order, of g^2)
//           accumulated in double (deterministic; no thread count enters the order)
//   scale = min(1, max_norm / (norm + 1e-6))
// The gradients themselves are not changed here: pass `scale` to AdamW::step
// as grad_scale (each gradient element is then g * float(scale) in FP32, the
// same value PyTorch's in-place grad.mul_(clip_coef) produces), or apply it
// with scale_gradients.
//
// Non-finite gradients give a non-finite norm; then finite = false, scale = 1
// and clipped = false, and AdamW::step skips the step.
//
// Usage:
//   GradClipResult c = clip_grad_norm(slots, /*max_norm=*/1.0);
//   AdamWStepResult r = adamw.step(slots, lr, c.scale);
#pragma once

#include <vector>

#include "core/train/param_slot.h"

namespace fp8rl::train {

struct GradClipResult {
  double norm = 0.0;     // pre-clip global L2 norm
  float scale = 1.0f;    // multiplier for every gradient element, in (0, 1]
  bool clipped = false;  // scale < 1
  bool finite = true;    // norm is finite (no NaN/Inf gradient)
};

// The global L2 norm of all gradients, in double, in a fixed order. Only the
// grad pointers and sizes of the slots are read.
double global_grad_norm(const std::vector<ParamSlot>& slots);

// Throws Error(invalid_argument) when max_norm is not finite and > 0.
GradClipResult clip_grad_norm(const std::vector<ParamSlot>& slots, double max_norm);

// The same result for a norm computed elsewhere, e.g. the square root of
// Backend::sum_of_squares over a gradient arena (whose fixed order,
// kernels/common/reduction_order.h, differs from global_grad_norm's, so the
// last bits of the norm may too). Throws as clip_grad_norm.
GradClipResult clip_for_norm(double norm, double max_norm);

// grad[i] *= scale for every element (for callers that keep clipped gradients).
void scale_gradients(const std::vector<FloatSpan>& grads, float scale);

}  // namespace fp8rl::train
