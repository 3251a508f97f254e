// The output head's logits, for generation (ModelRunner) and training
// (TokenHead) alike: one definition, so that rollout and training logits
// agree bit for bit under either head precision (each logits row depends
// only on its own input row: kernels/transformer_ops.h's row rule).
#pragma once

#include <cstdint>

#include "core/policy/compiled_model.h"
#include "core/policy/device_array.h"

namespace fp8rl::policy {

// The head GEMM with its operand scratch, grown as needed.
class HeadLogits {
 public:
  // logits [rows, vocab] FP32 = normed [rows, hidden] . W_head^T, with normed
  // rounded to BF16 (BF16 head) or quantized to E4M3 in 1x128 tiles with the
  // model's scale format (FP8 head); FP32 accumulation.
  void compute(Backend& backend, const CompiledModel& model, const float* normed, int64_t rows, float* logits);

 private:
  DeviceArray<uint16_t> bf16_;  // [rows, hidden]
  DeviceArray<uint8_t> codes_;  // [rows, hidden]
  DeviceArray<float> scales_;   // [rows, ceil(hidden / 128)]
};

}  // namespace fp8rl::policy
