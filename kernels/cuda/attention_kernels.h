// KV cache stores and causal attention (forward and backward) on the GPU.
// The per-element arithmetic is kernels/common's (kv_cache_math.h,
// attention_math.h, attention_backward_math.h) and every sum runs in the CPU
// backend's order (lane_dot's 16-lane tree for the dots, key order for the
// softmax sums and the P.V / dS.K sums, ascending (token, head) for the dk / dv
// accumulation), so all results are bit-identical to the CPU backend's.
//
// The key ranges live in device memory, so the launches cannot refuse a bad
// one as the CPU backend does (invalid_argument): a token whose key_count is
// outside [1, max_key_count] or whose key_begin is negative (or, backward,
// whose range ends past cache_row_count) gets NaN in its out / dq rows and
// contributes nothing to dk / dv. Callers validate them (backend.h).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "../transformer_backward_ops.h"
#include "../transformer_ops.h"

namespace fp8rl::cuda {

// cache[cache_rows[t], :] = kv_store_bf16 / kv_store_e4m3(source[t, :]).
// source [tokens, kv_dim] -> cache [*, kv_dim]. Bit-identical to the CPU.
void launch_kv_store(const KvStoreArgs& args, cudaStream_t stream);

// Bytes of workspace launch_attention needs: min(tokens * heads, 1024) *
// max_key_count floats (one row of scores per CTA). 0 when tokens is 0.
size_t attention_workspace_bytes(const AttentionArgs& args);

// out [tokens, heads, head_dim] = attention over the cache rows of each token
// (transformer_ops.h). Bit-identical to the CPU. Refuses head_dim > 8192 and
// more than 1024 query heads per kv head (invalid_argument, as the CPU backend
// does). workspace: attention_workspace_bytes.
void launch_attention(const AttentionArgs& args, void* workspace, cudaStream_t stream);

// Bytes of workspace launch_attention_backward needs: two floats per (token,
// head, key) for a chunk of tokens sized to stay near 64 MiB (at least one
// token), and two int32 per cache row. 0 when tokens is 0.
size_t attention_backward_workspace_bytes(const AttentionBackwardArgs& args);

// Writes dq [tokens, heads, head_dim], adds into dk, dv [cache_row_count,
// kv_heads, head_dim] in ascending (token, head) order, without atomics on
// them: bit-identical to the CPU. Refuses head_dim > 8192 (unsupported; the CPU
// backend has no such limit).
// workspace: attention_backward_workspace_bytes.
void launch_attention_backward(const AttentionBackwardArgs& args, void* workspace, cudaStream_t stream);

}  // namespace fp8rl::cuda
