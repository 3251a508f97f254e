// What the benchmarks share: timing, medians and the model shapes they
// measure (SmolLM2-135M on the CPU, Llama-3.2-1B on the GPU).
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/model/model_config.h"

namespace fp8rl::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// 0 for no values.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// SmolLM2-135M's config.json.
inline model::ModelConfig smollm2_135m() {
  model::ModelConfig config;
  config.family = model::ModelFamily::llama;
  config.vocab_size = 49152;
  config.hidden_size = 576;
  config.num_layers = 30;
  config.num_attention_heads = 9;
  config.num_key_value_heads = 3;
  config.head_dim = 64;
  config.intermediate_size = 1536;
  config.max_position_embeddings = 8192;
  config.rms_norm_eps = 1e-5;
  config.rope_theta = 100000.0;
  config.tie_word_embeddings = true;
  config.torch_dtype = "bfloat16";
  return config;
}

// Llama-3.2-1B's config.json, without its rope scaling (random weights: it changes no work).
inline model::ModelConfig llama_3_2_1b() {
  model::ModelConfig config = smollm2_135m();
  config.vocab_size = 128256;
  config.hidden_size = 2048;
  config.num_layers = 16;
  config.num_attention_heads = 32;
  config.num_key_value_heads = 8;
  config.head_dim = 64;
  config.intermediate_size = 8192;
  config.max_position_embeddings = 131072;
  config.rope_theta = 500000.0;
  return config;
}

}  // namespace fp8rl::bench
