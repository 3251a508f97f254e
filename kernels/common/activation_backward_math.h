// The backward of SwiGLU (activation_math.h), out = silu(g) * u:
//   s       = 1 / (1 + exp_f32(-g))          (the sigmoid)
//   dup     = dout * silu(g)                 (silu() exactly as the forward)
//   dgate   = (dout * u) * (s * (1 + g * (1 - s)))
// using silu'(g) = s (1 + g (1 - s)); one IEEE rounding per operation.
#pragma once

#include "activation_math.h"

namespace fp8rl {

FP8RL_HD float sigmoid(float x) { return div_rn(1.0f, add_rn(1.0f, exp_f32(-x))); }

FP8RL_HD float silu_derivative(float x) {
  const float s = sigmoid(x);
  return mul_rn(s, add_rn(1.0f, mul_rn(x, sub_rn(1.0f, s))));
}

struct SwigluGrad {
  float gate;
  float up;
};

FP8RL_HD SwigluGrad swiglu_backward_value(float gate, float up, float dout) {
  SwigluGrad g;
  g.up = mul_rn(dout, silu(gate));
  g.gate = mul_rn(mul_rn(dout, up), silu_derivative(gate));
  return g;
}

}  // namespace fp8rl
