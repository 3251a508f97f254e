#include "core/train/adamw.h"

#include <cmath>
#include <string>

#include "kernels/error.h"

namespace fp8rl::train {

AdamWOptions adamw_options_defaults() { return AdamWOptions{}; }

void validate_adamw_options(const AdamWOptions& o) {
  require(std::isfinite(o.beta1) && o.beta1 >= 0.0 && o.beta1 < 1.0,
          "AdamW: beta1 must be in [0, 1), got " + std::to_string(o.beta1));
  require(std::isfinite(o.beta2) && o.beta2 >= 0.0 && o.beta2 < 1.0,
          "AdamW: beta2 must be in [0, 1), got " + std::to_string(o.beta2));
  require(std::isfinite(o.eps) && o.eps > 0.0, "AdamW: eps must be finite and > 0, got " + std::to_string(o.eps));
  require(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0,
          "AdamW: weight_decay must be finite and >= 0, got " + std::to_string(o.weight_decay));
}

AdamW::AdamW(const AdamWOptions& options, std::vector<size_t> slot_sizes)
    : options_(options), sizes_(std::move(slot_sizes)) {
  validate_adamw_options(options_);
  require(!sizes_.empty(), "AdamW: no parameter slots");
  m_.reserve(sizes_.size());
  v_.reserve(sizes_.size());
  for (size_t n : sizes_) {
    m_.emplace_back(n, 0.0f);
    v_.emplace_back(n, 0.0f);
  }
}

size_t AdamW::slot_size(size_t slot) const {
  require(slot < sizes_.size(),
          "AdamW: slot " + std::to_string(slot) + " out of range (" + std::to_string(sizes_.size()) + " slots)");
  return sizes_[slot];
}

FloatSpan AdamW::exp_avg(size_t slot) {
  const size_t n = slot_size(slot);
  return {m_[slot].data(), n};
}

FloatSpan AdamW::exp_avg_sq(size_t slot) {
  const size_t n = slot_size(slot);
  return {v_[slot].data(), n};
}

void AdamW::set_step_count(int64_t step) {
  require(step >= 0, "AdamW: step count must be >= 0, got " + std::to_string(step));
  step_ = step;
}

AdamWStepResult AdamW::step(const std::vector<ParamSlot>& slots, double lr, float grad_scale) {
  require(std::isfinite(lr) && lr >= 0.0, "AdamW: lr must be finite and >= 0, got " + std::to_string(lr));
  require(std::isfinite(grad_scale) && grad_scale > 0.0f,
          "AdamW: grad_scale must be finite and > 0, got " + std::to_string(grad_scale));
  check_param_slots(slots, sizes_, "AdamW");

  AdamWStepResult result;
  result.lr = lr;
  const bool scaled = grad_scale != 1.0f;
  for (size_t k = 0; k < slots.size(); ++k) {
    const ParamSlot& s = slots[k];
    for (size_t i = 0; i < s.size; ++i) {
      const float g = scaled ? s.grad[i] * grad_scale : s.grad[i];
      if (!std::isfinite(g)) {
        result.skipped = true;
        result.bad_slot = k;
        result.bad_index = i;
        result.step_count = step_;
        return result;
      }
    }
  }

  ++step_;
  result.step_count = step_;
  // Scalars as PyTorch's _single_tensor_adamw computes them: Python floats
  // (double), rounded to float when they meet a float tensor.
  const double t = static_cast<double>(step_);
  const double bias_correction1 = 1.0 - std::pow(options_.beta1, t);
  const double bias_correction2 = 1.0 - std::pow(options_.beta2, t);
  const float neg_step_size = static_cast<float>(-(lr / bias_correction1));
  const float bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  const float decay_mul = static_cast<float>(1.0 - lr * options_.weight_decay);
  const float beta1 = static_cast<float>(options_.beta1);
  const float one_minus_beta1 = static_cast<float>(1.0 - options_.beta1);
  const float beta2 = static_cast<float>(options_.beta2);
  const float one_minus_beta2 = static_cast<float>(1.0 - options_.beta2);
  const float eps = static_cast<float>(options_.eps);

  for (size_t k = 0; k < slots.size(); ++k) {
    const ParamSlot& s = slots[k];
    float* m = m_[k].data();
    float* v = v_[k].data();
    const bool decay = s.decay && options_.weight_decay != 0.0;
    for (size_t i = 0; i < s.size; ++i) {
      const float g = scaled ? s.grad[i] * grad_scale : s.grad[i];
      float p = s.param[i];
      if (decay) p = p * decay_mul;
      m[i] = std::fma(one_minus_beta1, g, m[i] * beta1);
      v[i] = std::fma(one_minus_beta2 * g, g, v[i] * beta2);
      const float denom = std::sqrt(v[i]) / bias_correction2_sqrt + eps;
      s.param[i] = p + (neg_step_size * m[i]) / denom;
    }
  }
  return result;
}

}  // namespace fp8rl::train
