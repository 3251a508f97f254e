#include "core/policy/head_logits.h"

#include "core/policy/quantized_operand.h"

namespace fp8rl::policy {

void HeadLogits::compute(Backend& backend, const CompiledModel& model, const float* normed, int64_t rows,
                         float* logits) {
  const int64_t vocab = model.vocab_size(), hidden = model.hidden_size();
  if (!model.head_fp8()) {
    bf16_.reserve_discarding(backend, static_cast<size_t>(rows * hidden));
    backend.to_bf16(normed, rows * hidden, bf16_.data());
    backend.gemm_bf16(bf16_.data(), model.lm_head_bf16(), rows, vocab, hidden, logits, DType::f32);
    return;
  }
  const Fp8Matrix a =
      quantize_operand(backend, normed, rows, hidden, BlockLayout::tile_1x128, model.scale_format(), codes_, scales_);
  backend.gemm_fp8(a, model.head_weights().fp8_matrix(), logits, DType::f32);
}

}  // namespace fp8rl::policy
