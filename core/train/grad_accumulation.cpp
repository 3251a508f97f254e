#include "core/train/grad_accumulation.h"

#include <algorithm>
#include <string>

#include "kernels/error.h"

namespace fp8rl::train {

GradAccumulator::GradAccumulator(std::vector<size_t> slot_sizes) {
  require(!slot_sizes.empty(), "GradAccumulator: no slots");
  buffers_.reserve(slot_sizes.size());
  for (size_t n : slot_sizes) buffers_.emplace_back(n, 0.0f);
  adds_.assign(slot_sizes.size(), 0);
}

void GradAccumulator::begin_step(int64_t num_microbatches) {
  require(num_microbatches >= 1,
          "GradAccumulator: num_microbatches must be >= 1, got " + std::to_string(num_microbatches));
  num_microbatches_ = num_microbatches;
  scale_ = static_cast<float>(1.0 / static_cast<double>(num_microbatches));
  for (auto& b : buffers_) std::fill(b.begin(), b.end(), 0.0f);
  std::fill(adds_.begin(), adds_.end(), 0);
}

size_t GradAccumulator::slot_size(size_t slot) const {
  require(slot < buffers_.size(), "GradAccumulator: slot " + std::to_string(slot) + " out of range (" +
                                      std::to_string(buffers_.size()) + " slots)");
  return buffers_[slot].size();
}

void GradAccumulator::add(size_t slot, const float* grad, size_t size) {
  require(num_microbatches_ > 0, "GradAccumulator: add before begin_step");
  const size_t n = slot_size(slot);
  require(size == n, "GradAccumulator: slot " + std::to_string(slot) + " has " + std::to_string(n) +
                         " elements, got a gradient of " + std::to_string(size));
  require(n == 0 || grad != nullptr, "GradAccumulator: null gradient for slot " + std::to_string(slot));
  require(adds_[slot] < num_microbatches_, "GradAccumulator: slot " + std::to_string(slot) + " already has " +
                                               std::to_string(num_microbatches_) + " micro-batches");
  float* b = buffers_[slot].data();
  for (size_t i = 0; i < n; ++i) b[i] = b[i] + scale_ * grad[i];
  ++adds_[slot];
}

bool GradAccumulator::complete() const {
  if (num_microbatches_ == 0) return false;
  for (int64_t a : adds_) {
    if (a != num_microbatches_) return false;
  }
  return true;
}

const float* GradAccumulator::grad(size_t slot) const {
  slot_size(slot);  // range check
  return buffers_[slot].data();
}

float* GradAccumulator::mutable_grad(size_t slot) {
  slot_size(slot);  // range check
  return buffers_[slot].data();
}

}  // namespace fp8rl::train
