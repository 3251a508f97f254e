// One AdamW element update, the arithmetic of core/train/adamw.h (bitwise
// torch.optim.AdamW's single-tensor path), shared by AdamW::step on the host,
// the CPU backend's adamw_update and the CUDA kernel, so all three compute the
// same bits. The step's scalars are computed once, on the host, in double and
// rounded to float exactly where PyTorch hands a Python float to a float
// tensor op (adamw_scalars); the element update is then FP32 only:
//   g      = grad * grad_scale                           (only when grad_scale != 1)
//   param  = param * decay_mul                           (only when decay)
//   m      = fma(one_minus_beta1, g, m * beta1)
//   v      = fma(one_minus_beta2 * g, g, v * beta2)
//   denom  = sqrt(v) / bias_correction2_sqrt + eps
//   param  = param + (neg_step_size * m) / denom
// Every operation goes through float_rn.h: the two FMAs are explicit, the rest
// rounds once per operation whatever nvcc's or the host compiler's contraction.
#pragma once

#include <cmath>
#include <cstdint>

#include "float_rn.h"

namespace fp8rl {

struct AdamWScalars {
  float grad_scale = 1.0f;                     // applied (g = grad * grad_scale) only when != 1
  float decay_mul = 1.0f;                      // float(1 - lr * weight_decay); param *= decay_mul only when decay
  float beta1 = 0.0f, one_minus_beta1 = 0.0f;  // float(b1), float(1 - b1)
  float beta2 = 0.0f, one_minus_beta2 = 0.0f;  // float(b2), float(1 - b2)
  float bias_correction2_sqrt = 1.0f;          // float(sqrt(1 - b2^t))
  float neg_step_size = 0.0f;                  // float(-(lr / (1 - b1^t)))
  float eps = 0.0f;                            // float(eps)
  bool decay = false;                          // weight decay applies (and is non-zero)
};

// The hyper-parameters as the caller holds them (core/train AdamWOptions):
// Python floats in PyTorch, so double here.
struct AdamWHyperparameters {
  double beta1 = 0.0, beta2 = 0.0, eps = 0.0, weight_decay = 0.0;
};

// The scalars of step t (the step count after its increment, >= 1) with
// learning rate lr, as PyTorch's _single_tensor_adamw computes them: b^t,
// 1 - b^t, lr / (1 - b1^t) and sqrt(1 - b2^t) in double, each rounded to float
// once. decay: the tensor is weight-decayed (it is a no-op when weight_decay
// is 0, and then skipped, as AdamW::step always did). Host only.
inline AdamWScalars adamw_scalars(const AdamWHyperparameters& h, double lr, int64_t step, float grad_scale,
                                  bool decay) {
  const double t = static_cast<double>(step);
  const double bias_correction1 = 1.0 - std::pow(h.beta1, t);
  const double bias_correction2 = 1.0 - std::pow(h.beta2, t);
  AdamWScalars s;
  s.grad_scale = grad_scale;
  s.decay_mul = static_cast<float>(1.0 - lr * h.weight_decay);
  s.beta1 = static_cast<float>(h.beta1);
  s.one_minus_beta1 = static_cast<float>(1.0 - h.beta1);
  s.beta2 = static_cast<float>(h.beta2);
  s.one_minus_beta2 = static_cast<float>(1.0 - h.beta2);
  s.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  s.neg_step_size = static_cast<float>(-(lr / bias_correction1));
  s.eps = static_cast<float>(h.eps);
  s.decay = decay && h.weight_decay != 0.0;
  return s;
}

// The gradient AdamW sees: grad * grad_scale, or grad itself (bit for bit)
// when the scale is 1.
FP8RL_HD float apply_grad_scale(float grad, float grad_scale) {
  return grad_scale != 1.0f ? mul_rn(grad, grad_scale) : grad;
}

// Whether that gradient is finite: AdamW::step skips a step on the first that
// is not, which Backend::first_non_finite finds.
FP8RL_HD bool scaled_grad_is_finite(float grad, float grad_scale) {
  return is_finite_bits(float_bits(apply_grad_scale(grad, grad_scale)));
}

FP8RL_HD void adamw_update_element(float& param, float& exp_avg, float& exp_avg_sq, float grad, const AdamWScalars& s) {
  const float g = apply_grad_scale(grad, s.grad_scale);
  float p = param;
  if (s.decay) p = mul_rn(p, s.decay_mul);
  const float m = fma_rn(s.one_minus_beta1, g, mul_rn(exp_avg, s.beta1));
  const float v = fma_rn(mul_rn(s.one_minus_beta2, g), g, mul_rn(exp_avg_sq, s.beta2));
  const float denom = add_rn(div_rn(sqrt_rn(v), s.bias_correction2_sqrt), s.eps);
  exp_avg = m;
  exp_avg_sq = v;
  param = add_rn(p, div_rn(mul_rn(s.neg_step_size, m), denom));
}

}  // namespace fp8rl
