// AdamW (decoupled weight decay) over FP32 master weights, numerically as
// torch.optim.AdamW's single-tensor path (foreach=False, amsgrad=False,
// maximize=False, capturable=False).
//
// One step, t = step_count after the increment, hyper-parameters in double
// (Python floats in PyTorch), scalars rounded to float where PyTorch hands
// them to a float tensor op; per element, in FP32, in exactly this order:
//   g      = grad * grad_scale                        (skipped when grad_scale == 1)
//   param  = param * float(1 - lr*wd)                 (only for slots with decay; wd = 0 otherwise)
//   m      = fma(float(1 - b1), g, m * float(b1))
//   v      = fma(float(1 - b2) * g, g, v * float(b2))
//   denom  = sqrt(v) / float(sqrt(1 - b2^t)) + float(eps)
//   param  = param + (float(-lr / (1 - b1^t)) * m) / denom
// (b^t, 1 - b^t, lr/(1 - b1^t) and sqrt(1 - b2^t) in double.) The two
// moment updates use an explicit FMA, as PyTorch's vectorized CPU kernels
// (AVX2 with FMA) do; every other operation rounds once (float_rn.h). On
// PyTorch 1.13 CPU the result is then bit-identical
// (tests/optim/adamw_torch_test.cpp measures it). Both the scalars and the
// element update are kernels/common/adamw_math.h's (adamw_scalars,
// adamw_update_element), shared with Backend::adamw_update, so the CPU and
// CUDA backends update bitwise as this class does.
//
// Non-finite gradients: before anything changes, every g is checked; if any
// is NaN or infinite the step is skipped (parameters, m, v and the step count
// untouched) and the result names the first offending slot and index.
//
// Deterministic: single-threaded, every element updated independently, so
// the result depends only on the inputs.
//
// State for checkpoints: exp_avg(slot), exp_avg_sq(slot) and step_count()/
// set_step_count() expose the whole state; copying it out and back in
// continues bit-identically.
//
// Usage:
//   AdamW opt(adamw_options_defaults(), sizes);   // sizes[i] = elements of slot i
//   for (int64_t s = 0; s < steps; ++s) {
//     GradClipResult c = clip_grad_norm(slots, 1.0);
//     AdamWStepResult r = opt.step(slots, learning_rate(schedule, opt.step_count()), c.scale);
//     if (r.skipped) log("skipped: non-finite gradient in slot", r.bad_slot);
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/train/param_slot.h"

namespace fp8rl::train {

struct AdamWOptions {
  double beta1 = 0.9;          // in [0, 1)
  double beta2 = 0.999;        // in [0, 1)
  double eps = 1e-8;           // > 0
  double weight_decay = 0.01;  // >= 0; applied only to slots with decay = true
};

AdamWOptions adamw_options_defaults();

// Throws Error(invalid_argument) naming the bad hyper-parameter.
void validate_adamw_options(const AdamWOptions& options);

struct AdamWStepResult {
  bool skipped = false;    // a gradient was NaN or infinite; nothing changed
  size_t bad_slot = 0;     // when skipped: first offending slot ...
  size_t bad_index = 0;    // ... and element index within it
  int64_t step_count = 0;  // the optimizer's step count after this call
  double lr = 0.0;         // the learning rate used (or that would have been used)
};

class AdamW {
 public:
  // State m and v are zero, step count 0. slot_sizes must be non-empty.
  AdamW(const AdamWOptions& options, std::vector<size_t> slot_sizes);

  // One optimizer step. `slots` must match the slot sizes given at
  // construction, in the same order. lr must be finite and >= 0; grad_scale
  // (e.g. the clipping scale) finite and > 0. Throws Error(invalid_argument)
  // on bad arguments, before changing anything.
  AdamWStepResult step(const std::vector<ParamSlot>& slots, double lr, float grad_scale = 1.0f);

  const AdamWOptions& options() const { return options_; }
  size_t num_slots() const { return sizes_.size(); }
  size_t slot_size(size_t slot) const;

  // Optimizer state, for checkpoint writers and readers: valid until the
  // optimizer is destroyed. Writing through them restores state.
  FloatSpan exp_avg(size_t slot);     // m: [slot_size(slot)]
  FloatSpan exp_avg_sq(size_t slot);  // v: [slot_size(slot)]
  int64_t step_count() const { return step_; }
  void set_step_count(int64_t step);  // >= 0

 private:
  AdamWOptions options_;
  std::vector<size_t> sizes_;
  std::vector<std::vector<float>> m_;
  std::vector<std::vector<float>> v_;
  int64_t step_ = 0;
};

}  // namespace fp8rl::train
