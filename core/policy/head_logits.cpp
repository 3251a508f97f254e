#include "core/policy/head_logits.h"

#include "kernels/common/quant_layout.h"

namespace fp8rl::policy {

void HeadLogits::compute(Backend& backend, const CompiledModel& model, const float* normed, int64_t rows,
                         float* logits) {
  const int64_t vocab = model.vocab_size(), hidden = model.hidden_size();
  const auto elements = static_cast<size_t>(rows * hidden);
  if (!model.head_fp8()) {
    bf16_.reserve_discarding(backend, elements);
    backend.to_bf16(normed, rows * hidden, bf16_.data());
    backend.gemm_bf16(bf16_.data(), model.lm_head_bf16(), rows, vocab, hidden, logits, DType::f32);
    return;
  }
  QuantSpec spec;
  spec.layout = BlockLayout::tile_1x128;
  spec.scale_format = model.scale_format();
  codes_.reserve_discarding(backend, elements);
  scales_.reserve_discarding(backend, static_cast<size_t>(scale_shape(BlockLayout::tile_1x128, rows, hidden).count()));
  backend.quantize(normed, DType::f32, rows, hidden, spec, codes_.data(), scales_.data());
  Fp8Matrix a;
  a.codes = codes_.data();
  a.scales = scales_.data();
  a.rows = rows;
  a.cols = hidden;
  backend.gemm_fp8(a, model.head_weights().fp8_matrix(), logits, DType::f32);
}

}  // namespace fp8rl::policy
