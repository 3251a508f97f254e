#include "core/train/adamw.h"

#include <cmath>
#include <string>

#include "kernels/common/adamw_math.h"
#include "kernels/error.h"

namespace fp8rl::train {

AdamWOptions adamw_options_defaults() { return AdamWOptions{}; }

void validate_adamw_options(const AdamWOptions& o) {
  require(std::isfinite(o.beta1) && o.beta1 >= 0.0 && o.beta1 < 1.0,
          "AdamW: beta1 must be in [0, 1), got " + std::to_string(o.beta1));
  require(std::isfinite(o.beta2) && o.beta2 >= 0.0 && o.beta2 < 1.0,
          "AdamW: beta2 must be in [0, 1), got " + std::to_string(o.beta2));
  require(std::isfinite(o.eps) && o.eps > 0.0, "AdamW: adam_epsilon (eps) must be finite and > 0, got " + std::to_string(o.eps));
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
  for (size_t k = 0; k < slots.size(); ++k) {
    const ParamSlot& s = slots[k];
    for (size_t i = 0; i < s.size; ++i) {
      if (!scaled_grad_is_finite(s.grad[i], grad_scale)) {
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
  const AdamWHyperparameters hyper{options_.beta1, options_.beta2, options_.eps, options_.weight_decay};
  for (size_t k = 0; k < slots.size(); ++k) {
    const ParamSlot& s = slots[k];
    const AdamWScalars scalars = adamw_scalars(hyper, lr, step_, grad_scale, s.decay);
    float* m = m_[k].data();
    float* v = v_[k].data();
    for (size_t i = 0; i < s.size; ++i) adamw_update_element(s.param[i], m[i], v[i], s.grad[i], scalars);
  }
  return result;
}

}  // namespace fp8rl::train
