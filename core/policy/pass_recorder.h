// What a forward pass leaves behind for a backward pass. Inference points
// every layer at one shared workspace; training hands ModelRunner::run a
// PassRecorder (core/train/forward_tape.h) that gives each layer its own
// buffers and keeps the pass's indices. The arithmetic is the same either
// way, so training logits equal rollout logits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/blocks/moe_state.h"
#include "core/policy/pass_upload.h"

namespace fp8rl::policy {

// Where one layer's forward pass writes its intermediate results.
struct LayerActivations {
  float* attention_input = nullptr;   // [tokens, hidden] copy of the residual entering the layer; null: not kept
  float* attention_normed = nullptr;  // [tokens, hidden] input_layernorm output
  float* q_raw = nullptr;             // [tokens, q_dim] q projection before the q norm; == q without qk_norm
  float* k_raw = nullptr;             // [tokens, kv_dim] k projection before the k norm; == k without qk_norm
  float* q = nullptr;                 // [tokens, q_dim] post-RoPE queries
  float* k = nullptr;                 // [tokens, kv_dim] post-RoPE keys
  float* v = nullptr;                 // [tokens, kv_dim] values
  float* attention = nullptr;         // [tokens, q_dim] attention output (o_proj input)
  float* mlp_input = nullptr;         // [tokens, hidden] copy of the residual after attention; null: not kept
  float* mlp_normed = nullptr;        // [tokens, hidden] post_attention_layernorm output
  float* gate = nullptr;              // [tokens, intermediate] gate projection (pre-activation)
  float* up = nullptr;                // [tokens, intermediate] up projection
  float* act = nullptr;               // [tokens, intermediate] silu(gate) * up (down_proj input); may == gate
  // A sparse layer's routing and experts' intermediates (then gate, up and
  // act are unused); null: the runner's workspace (inference), or a dense layer.
  blocks::MoeState* moe = nullptr;
};

// Receives one whole pass: begin() first (the pass's indices are valid only
// during the pass, so a recorder that needs them later copies them), then
// each layer writes where layer() says, then the final residual is copied
// to final_residual().
class PassRecorder {
 public:
  virtual ~PassRecorder() = default;
  virtual void begin(int64_t tokens, const PassIndices& pass) = 0;
  virtual LayerActivations layer(size_t index) = 0;
  virtual float* final_residual() = 0;  // [tokens, hidden] before the final norm
};

}  // namespace fp8rl::policy
