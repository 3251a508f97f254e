// Gradient accumulation over micro-batches into FP32 buffers, one per slot:
//   begin_step(n):      every buffer = 0, scale = float(1 / n)
//   add(slot, grad):    buffer[i] = buffer[i] + scale * grad[i]
// (the gradient of the mean over micro-batches, as loss / n per micro-batch
// would give). Each element's sum is taken in the order of the add() calls,
// so adding micro-batches in a fixed order gives bit-identical results
// whatever produced them. A slot may receive at most n adds per step;
// complete() says whether every slot received exactly n.
//
// Usage:
//   GradAccumulator acc(sizes);
//   acc.begin_step(num_microbatches);
//   for (mb ...) for (slot ...) acc.add(slot, micro_grad[slot].data(), micro_grad[slot].size());
//   slots[k].grad = acc.grad(k);   // then clip_grad_norm / AdamW::step
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fp8rl::train {

class GradAccumulator {
 public:
  explicit GradAccumulator(std::vector<size_t> slot_sizes);

  // Zeroes every buffer and sets the scale to 1/num_microbatches (>= 1).
  void begin_step(int64_t num_microbatches);

  // Adds one micro-batch's gradient for `slot` (size must equal the slot's).
  // Throws Error(invalid_argument) before begin_step, on a size mismatch, a
  // null pointer, or more adds than micro-batches.
  void add(size_t slot, const float* grad, size_t size);

  bool complete() const;
  size_t num_slots() const { return buffers_.size(); }
  size_t slot_size(size_t slot) const;
  float scale() const { return scale_; }

  // The accumulated gradient of `slot`: [slot_size(slot)], valid until the
  // accumulator is destroyed; contents change with begin_step/add.
  const float* grad(size_t slot) const;
  float* mutable_grad(size_t slot);

 private:
  std::vector<std::vector<float>> buffers_;
  std::vector<int64_t> adds_;
  int64_t num_microbatches_ = 0;
  float scale_ = 1.0f;
};

}  // namespace fp8rl::train
