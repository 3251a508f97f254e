// Activations: silu(x) = x / (1 + exp(-x)) with exp_math.h's exp, and the
// SwiGLU product silu(gate) * up.
#pragma once

#include "exp_math.h"

namespace fp8rl {

FP8RL_HD float silu(float x) { return div_rn(x, add_rn(1.0f, exp_f32(-x))); }

FP8RL_HD float swiglu_value(float gate, float up) { return mul_rn(silu(gate), up); }

}  // namespace fp8rl
