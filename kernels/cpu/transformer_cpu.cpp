#include "transformer_cpu.h"

#include <algorithm>
#include <cstring>

#include "../common/activation_math.h"
#include "../common/kv_cache_math.h"
#include "../common/norm_math.h"
#include "../common/rope_math.h"
#include "isa_dispatch.h"

namespace fp8rl::cpu {

FP8RL_ISA_BODY void embedding_rows_body(const uint16_t* table, int64_t hidden, const int32_t* ids, float* out,
                                        int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const uint16_t* row = table + static_cast<int64_t>(ids[i]) * hidden;
    float* dst = out + i * hidden;
    for (int64_t j = 0; j < hidden; ++j) dst[j] = bf16_decode(row[j]);
  }
}
void embedding_rows(const uint16_t* table, int64_t hidden, const int32_t* ids, float* out, int64_t begin, int64_t end) {
  isa_dispatch<embedding_rows_body>(table, hidden, ids, out, begin, end);
}

FP8RL_ISA_BODY void rms_norm_rows_body(const float* x, const float* weight, int64_t dim, float eps, float* out,
                                       int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) rms_norm_row(x + r * dim, weight, dim, eps, out + r * dim);
}
void rms_norm_rows(const float* x, const float* weight, int64_t dim, float eps, float* out, int64_t begin,
                   int64_t end) {
  isa_dispatch<rms_norm_rows_body>(x, weight, dim, eps, out, begin, end);
}

FP8RL_ISA_BODY void rope_tokens_body(float* x, const int32_t* positions, int64_t heads, int64_t head_dim,
                                     const float* cos, const float* sin, int64_t begin, int64_t end) {
  const int64_t half = head_dim / 2;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t position = positions[t];
    for (int64_t h = 0; h < heads; ++h)
      rope_rotate_head(x + (t * heads + h) * head_dim, cos + position * half, sin + position * half, half);
  }
}
void rope_tokens(float* x, const int32_t* positions, int64_t heads, int64_t head_dim, const float* cos,
                 const float* sin, int64_t begin, int64_t end) {
  isa_dispatch<rope_tokens_body>(x, positions, heads, head_dim, cos, sin, begin, end);
}

FP8RL_ISA_BODY void swiglu_span_body(const float* gate, const float* up, float* out, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) out[i] = swiglu_value(gate[i], up[i]);
}
void swiglu_span(const float* gate, const float* up, float* out, int64_t begin, int64_t end) {
  isa_dispatch<swiglu_span_body>(gate, up, out, begin, end);
}

FP8RL_ISA_BODY void add_span_body(float* x, const float* y, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) x[i] = add_rn(x[i], y[i]);
}
void add_span(float* x, const float* y, int64_t begin, int64_t end) { isa_dispatch<add_span_body>(x, y, begin, end); }

FP8RL_ISA_BODY void to_bf16_span_body(const float* x, uint16_t* out, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) out[i] = bf16_encode(x[i]);
}
void to_bf16_span(const float* x, uint16_t* out, int64_t begin, int64_t end) {
  isa_dispatch<to_bf16_span_body>(x, out, begin, end);
}

namespace {

// A band of rows at a time: each output row is written as one contiguous
// run while the band's input lines (rows * element bytes apart) stay in L1
// and serve the next columns. Square tiles fare badly here: with a
// power-of-two output stride (a vocab of 2^k) their writes all map to the
// same cache sets.
template <class In, class Out, class Convert>
void transpose_bands(const In* x, int64_t rows, int64_t cols, Out* out, int64_t begin, int64_t end, Convert convert) {
  constexpr int64_t kBand = 256;
  for (int64_t r0 = 0; r0 < rows; r0 += kBand) {
    const int64_t r1 = std::min(r0 + kBand, rows);
    for (int64_t c = begin; c < end; ++c) {
      Out* row = out + c * rows;
      for (int64_t r = r0; r < r1; ++r) row[r] = convert(x[r * cols + c]);
    }
  }
}

template <class Element>
void transpose_tiles(const Element* x, int64_t rows, int64_t cols, Element* out, int64_t begin, int64_t end) {
  transpose_bands(x, rows, cols, out, begin, end, [](Element e) { return e; });
}

}  // namespace

void transpose_columns(const void* x, int64_t rows, int64_t cols, int64_t element_bytes, void* out, int64_t begin,
                       int64_t end) {
  switch (element_bytes) {
    case 1: return transpose_tiles(static_cast<const uint8_t*>(x), rows, cols, static_cast<uint8_t*>(out), begin, end);
    case 2:
      return transpose_tiles(static_cast<const uint16_t*>(x), rows, cols, static_cast<uint16_t*>(out), begin, end);
    default:
      return transpose_tiles(static_cast<const uint32_t*>(x), rows, cols, static_cast<uint32_t*>(out), begin, end);
  }
}

void transpose_to_bf16_columns(const float* x, int64_t rows, int64_t cols, uint16_t* out, int64_t begin, int64_t end) {
  transpose_bands(x, rows, cols, out, begin, end, [](float v) { return bf16_encode(v); });
}

FP8RL_ISA_BODY void add_bias_rows_body(float* x, const float* bias, int64_t cols, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    float* row = x + r * cols;
    for (int64_t j = 0; j < cols; ++j) row[j] = add_rn(row[j], bias[j]);
  }
}
void add_bias_rows(float* x, const float* bias, int64_t cols, int64_t begin, int64_t end) {
  isa_dispatch<add_bias_rows_body>(x, bias, cols, begin, end);
}

void gather_rows_range(const float* x, int64_t cols, const int64_t* rows, float* out, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    std::memcpy(out + i * cols, x + rows[i] * cols, static_cast<size_t>(cols) * sizeof(float));
}

FP8RL_ISA_BODY void kv_store_tokens_body(const KvStoreArgs& args, int64_t begin, int64_t end) {
  const int64_t dim = args.kv_dim;
  for (int64_t t = begin; t < end; ++t) {
    const float* src = args.source + t * dim;
    const int64_t row = args.cache_rows[t];
    if (args.format == KvFormat::bf16) {
      uint16_t* dst = static_cast<uint16_t*>(args.cache) + row * dim;
      for (int64_t j = 0; j < dim; ++j) dst[j] = kv_store_bf16(src[j]);
    } else {
      uint8_t* dst = static_cast<uint8_t*>(args.cache) + row * dim;
      const float scale = args.scale;
      for (int64_t j = 0; j < dim; ++j) dst[j] = kv_store_e4m3(src[j], scale);
    }
  }
}
void kv_store_tokens(const KvStoreArgs& args, int64_t begin, int64_t end) {
  isa_dispatch<kv_store_tokens_body>(args, begin, end);
}

}  // namespace fp8rl::cpu
