#include <algorithm>
#include <cmath>

#include "../common/attention_backward_math.h"
#include "../common/attention_math.h"
#include "../common/kv_cache_math.h"
#include "../common/quant_layout.h"
#include "attention_kernels.h"
#include "cuda_check.h"

namespace fp8rl::cuda {
namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xFFFFFFFFu;

// Upper bound on CTAs per launch; every kernel loops over the rest.
constexpr int64_t kMaxGrid = 1 << 16;

// The forward keeps one row of scores per CTA in the workspace, so its grid is
// capped lower: 1024 CTAs of 128 threads still fill an H100/H200 about half.
constexpr int64_t kAttentionMaxCtas = 1024;

// CTA size of the per-(token, head) kernels: 8 half-warps score 8 keys at once.
constexpr int kAttentionThreads = 128;

// q^ of one (token, head) lives in shared memory; the CPU backend refuses
// larger heads for the forward too.
constexpr int64_t kMaxHeadDim = 8192;

// The backward's chunk of tokens keeps its workspace near this size.
constexpr int64_t kBackwardWorkspaceTarget = int64_t{64} << 20;

// The largest group of query heads per kv head the CPU backend's forward accepts.
constexpr int64_t kMaxGroup = 1024;

unsigned grid_size(int64_t work_items, int64_t cap) {
  return static_cast<unsigned>(std::clamp<int64_t>(work_items, 1, cap));
}

__device__ __forceinline__ float cached_value(const uint16_t* cache, int64_t i) {
  return attention_cached_bf16(cache[i]);
}
__device__ __forceinline__ float cached_value(const uint8_t* cache, int64_t i) {
  return attention_cached_e4m3(cache[i]);
}

// lane_dot(a, cached row) over n values by one half-warp: lane L of the half
// (L = lane % 16) accumulates exactly lane_dot's lane L (i = L, L + 16, ... in
// increasing i, from +0), then the xor shuffles by 8, 4, 2, 1 form lane_dot's
// tree: after 8, lane j < 8 holds s8[j]; after 4, lane j < 4 holds s4[j];
// after 2, lanes 0 and 1 hold s4[0] + s4[2] and s4[1] + s4[3]; after 1, lane
// 0 holds their sum. (Other lanes hold the same sums with operands swapped:
// IEEE addition commutes.) Called by all 32 lanes of the warp (the shuffles
// use the full mask); an inactive half passes active = false and still
// shuffles. The result is valid in lane 0 of each half.
template <typename T>
__device__ __forceinline__ float half_warp_dot(const float* a, const T* row, int64_t n, bool active) {
  const int lane16 = static_cast<int>(threadIdx.x % (kWarp / 2));
  float partial = 0.0f;
  if (active)
    for (int64_t i = lane16; i < n; i += kWarp / 2) partial = add_rn(partial, mul_rn(a[i], cached_value(row, i)));
#pragma unroll
  for (int offset = 8; offset > 0; offset /= 2) partial = add_rn(partial, __shfl_xor_sync(kFullMask, partial, offset));
  return partial;
}

// A token's key range as the kernels may use it: the CPU backend refuses the
// call instead (check_attention_keys, check_attention_backward_keys).
__device__ __forceinline__ bool valid_keys(int64_t begin, int64_t count, int64_t max_keys, int64_t row_limit) {
  return count >= 1 && count <= max_keys && begin >= 0 && begin <= row_limit - count;
}

__device__ __forceinline__ void fill_nan(float* row, int64_t n) {
  for (int64_t d = threadIdx.x; d < n; d += blockDim.x) row[d] = __int_as_float(0x7FC00000);
}

// Fills out[j] = mul_rn(lane_dot(a, row_j), scale) for the keys of one (token,
// head), one key per half-warp: the scores (a = q^, rows of K, attention_score)
// and dP (a = dO, rows of V, attention_prob_grad). row0 points at key 0's head
// slice; consecutive keys are `stride` elements apart.
template <typename T>
__device__ void dot_keys(const float* a, const T* row0, int64_t stride, int64_t head_dim, int64_t keys, float scale,
                         float* out) {
  const int64_t halves = blockDim.x / (kWarp / 2);
  const int64_t half = threadIdx.x / (kWarp / 2);
  // The bound is the same for both halves of a warp, so whole warps iterate together.
  for (int64_t base = half & ~int64_t{1}; base < keys; base += halves) {
    const int64_t j = base + (half & 1);
    const bool active = j < keys;
    const float dot = half_warp_dot(a, row0 + (active ? j : 0) * stride, head_dim, active);
    if (active && threadIdx.x % (kWarp / 2) == 0) out[j] = mul_rn(dot, scale);
  }
}

// kv_store: one thread per element, grid-stride; reads and writes coalesced along kv_dim.
template <typename T>
__global__ void kv_store_kernel(const float* source, const int64_t* cache_rows, int64_t tokens, int64_t kv_dim,
                                float scale, T* cache) {
  const int64_t count = tokens * kv_dim;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / kv_dim, col = i % kv_dim;
    T* dst = cache + cache_rows[t] * kv_dim + col;
    if constexpr (sizeof(T) == 2)
      *dst = kv_store_bf16(source[i]);
    else
      *dst = kv_store_e4m3(source[i], scale);
  }
}

// Forward: one CTA per (token, head) unit, grid-stride; CTA slot blockIdx.x of
// the workspace holds that unit's scores, then exponentials, then p^.
//   1. q^ into shared memory;
//   2. scores, one key per half-warp (half_warp_dot = lane_dot);
//   3. m, then l, by one thread in key order; the exponentials and p^ in parallel
//      (each is a function of its own score);
//   4. each thread owns output dims d and sums p^_j v^_jd over j in key order.
// Every step is the CPU's arithmetic in the CPU's order.
template <typename T>
__global__ void attention_kernel(AttentionArgs a, AttentionScales scales, float* workspace) {
  extern __shared__ float q_hat[];  // [head_dim]
  __shared__ float shared_max, shared_sum;
  const bool fp8_math = a.math == AttentionMath::fp8;
  const int64_t hd = a.head_dim, group = a.heads / a.kv_heads, stride = a.kv_heads * hd;
  const T* k_cache = static_cast<const T*>(a.k_cache);
  const T* v_cache = static_cast<const T*>(a.v_cache);
  float* probs = workspace + blockIdx.x * static_cast<int64_t>(a.max_key_count);
  for (int64_t unit = blockIdx.x; unit < a.tokens * a.heads; unit += gridDim.x) {
    const int64_t token = unit / a.heads, head = unit % a.heads;
    const int64_t keys = a.key_count[token], begin = a.key_begin[token];
    float* out = a.out + unit * hd;
    // CTA-uniform: every thread reads the same range.
    if (!valid_keys(begin, keys, a.max_key_count, INT64_MAX)) {
      fill_nan(out, hd);
      continue;
    }
    const float* q = a.q + unit * hd;
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) q_hat[d] = attention_query_value(q[d], fp8_math, a.q_scale);
    __syncthreads();
    const int64_t first = begin * stride + (head / group) * hd;
    dot_keys(q_hat, k_cache + first, stride, hd, keys, scales.score, probs);
    __syncthreads();
    if (threadIdx.x == 0) shared_max = attention_max_score(probs, keys);
    __syncthreads();
    const float m = shared_max;
    for (int64_t j = threadIdx.x; j < keys; j += blockDim.x) probs[j] = exp_f32(sub_rn(probs[j], m));
    __syncthreads();
    if (threadIdx.x == 0) shared_sum = attention_prob_sum(probs, keys);
    __syncthreads();  // the sum has read every e_j before they become p^_j
    for (int64_t j = threadIdx.x; j < keys; j += blockDim.x) probs[j] = attention_prob_value(probs[j], fp8_math);
    __syncthreads();
    const float l = shared_sum;
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
      float acc = 0.0f;
      // Unrolled so that several rows' loads are in flight; the adds keep key order.
#pragma unroll 8
      for (int64_t j = 0; j < keys; ++j)
        acc = add_rn(acc, mul_rn(probs[j], cached_value(v_cache, first + j * stride + d)));
      out[d] = attention_output(acc, scales.out, l);
    }
    __syncthreads();  // q_hat, probs and the shared scalars are reused by the next unit
  }
}

// Backward, phase A, for the tokens [t0, t0 + chunk): one CTA per (token,
// head), as the forward. Recomputes the forward's e_j and l, then dP_j (one
// key per half-warp, lane_dot order), D (one thread, key order), and leaves
// in the workspace, slot (t - t0) * heads + head:
//   weights[j] = Pv_j (attention_value_weight), grads[j] = dS_j;
// writes dq = (sum_j dS_j k^_j in key order) * grad.dq.
template <typename T>
__global__ void attention_backward_rows_kernel(AttentionBackwardArgs b, AttentionScales fwd, AttentionGradScales grad,
                                               int64_t t0, int64_t chunk, float* workspace) {
  extern __shared__ float q_hat[];  // [head_dim]
  __shared__ float shared_max, shared_sum, shared_dsum;
  const AttentionArgs& a = b.forward;
  const bool fp8_math = a.math == AttentionMath::fp8;
  const int64_t hd = a.head_dim, group = a.heads / a.kv_heads, stride = a.kv_heads * hd;
  const int64_t max_keys = a.max_key_count;
  const T* k_cache = static_cast<const T*>(a.k_cache);
  const T* v_cache = static_cast<const T*>(a.v_cache);
  for (int64_t slot = blockIdx.x; slot < chunk * a.heads; slot += gridDim.x) {
    const int64_t token = t0 + slot / a.heads, head = slot % a.heads;
    const int64_t unit = token * a.heads + head;
    const int64_t keys = a.key_count[token], begin = a.key_begin[token];
    float* dq = b.dq + unit * hd;
    if (!valid_keys(begin, keys, max_keys, b.cache_row_count)) {  // CTA-uniform
      fill_nan(dq, hd);
      continue;
    }
    float* e = workspace + slot * 2 * max_keys;  // scores, then e_j, then Pv_j
    float* dp = e + max_keys;                    // dP_j, then dS_j
    const float* q = a.q + unit * hd;
    const float* dout = b.dout + unit * hd;
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) q_hat[d] = attention_query_value(q[d], fp8_math, a.q_scale);
    __syncthreads();
    const int64_t first = begin * stride + (head / group) * hd;
    dot_keys(q_hat, k_cache + first, stride, hd, keys, fwd.score, e);
    dot_keys(dout, v_cache + first, stride, hd, keys, grad.dp, dp);
    __syncthreads();
    if (threadIdx.x == 0) shared_max = attention_max_score(e, keys);
    __syncthreads();
    const float m = shared_max;
    for (int64_t j = threadIdx.x; j < keys; j += blockDim.x) e[j] = exp_f32(sub_rn(e[j], m));
    __syncthreads();
    if (threadIdx.x == 0) {
      const float l = attention_prob_sum(e, keys);
      shared_sum = l;
      shared_dsum = attention_prob_grad_dot(e, dp, keys, l);
    }
    __syncthreads();
    const float l = shared_sum, dsum = shared_dsum;
    for (int64_t j = threadIdx.x; j < keys; j += blockDim.x) {
      const float ej = e[j];
      dp[j] = attention_score_grad(attention_normalized_prob(ej, l), dp[j], dsum);
      e[j] = attention_value_weight(attention_prob_value(ej, fp8_math), grad.prob, l);
    }
    __syncthreads();
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
      float acc = 0.0f;
#pragma unroll 8  // as the forward's P.V sum
      for (int64_t j = 0; j < keys; ++j)
        acc = add_rn(acc, mul_rn(dp[j], cached_value(k_cache, first + j * stride + d)));
      dq[d] = mul_rn(acc, grad.dq);
    }
    __syncthreads();  // q_hat and the shared scalars are reused by the next unit
  }
}

// Backward, between phases A and B: the tokens of the chunk [t0, t0 + chunk)
// that can add into each cache row, as a range of chunk offsets
// [first[row], end[row]) covering every valid token whose key range holds
// the row. first starts at 0x7F7F7F7F (a 0x7F byte fill, above any chunk
// offset: a chunk's workspace stays near 64 MiB) and end at 0, so a row no
// token reads keeps an empty range. Min and max are order-free, so the
// atomics leave the same bounds on every run; phase B still tests each token
// of the range, so the bounds only spare it the tokens that cannot touch the
// row (without them every CTA walked the whole chunk: half of a training
// step's device time on Llama-3.2-1B shapes).
__global__ void attention_backward_row_tokens_kernel(AttentionBackwardArgs b, int64_t t0, int64_t chunk,
                                                     int32_t* first, int32_t* end) {
  const AttentionArgs& a = b.forward;
  for (int64_t offset = blockIdx.x; offset < chunk; offset += gridDim.x) {
    const int64_t keys = a.key_count[t0 + offset], begin = a.key_begin[t0 + offset];
    if (!valid_keys(begin, keys, a.max_key_count, b.cache_row_count)) continue;  // adds nothing in phase B
    for (int64_t j = threadIdx.x; j < keys; j += blockDim.x) {
      atomicMin(first + begin + j, static_cast<int32_t>(offset));
      atomicMax(end + begin + j, static_cast<int32_t>(offset + 1));
    }
  }
}

// Backward, phase B, for the same chunk: one CTA per (cache row, kv head),
// each thread owning dims d. It walks the row's candidate tokens (above) in
// ascending order and, for a token whose range holds the row, its group's
// query heads in ascending order, adding Pv_j dO and dS_j (q^ * grad.dk) into
// registers: the CPU's order of += into each dk / dv element
// (transformer_backward_ops.h). Chunks run in ascending order on the stream,
// so the order holds across them.
__global__ void attention_backward_kv_kernel(AttentionBackwardArgs b, AttentionGradScales grad, int64_t t0,
                                             const int32_t* first, const int32_t* end, const float* workspace) {
  const AttentionArgs& a = b.forward;
  const bool fp8_math = a.math == AttentionMath::fp8;
  const int64_t hd = a.head_dim, group = a.heads / a.kv_heads, stride = a.kv_heads * hd;
  const int64_t max_keys = a.max_key_count;
  for (int64_t unit = blockIdx.x; unit < b.cache_row_count * a.kv_heads; unit += gridDim.x) {
    const int64_t row = unit / a.kv_heads, kv_head = unit % a.kv_heads;
    const int64_t t_end = t0 + end[row];
    if (t_end == t0) continue;  // CTA-uniform: no token of the chunk reads this row
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
      const int64_t index = row * stride + kv_head * hd + d;
      float dk = b.dk[index], dv = b.dv[index];
      for (int64_t t = t0 + first[row]; t < t_end; ++t) {
        const int64_t keys = a.key_count[t], begin = a.key_begin[t];
        if (!valid_keys(begin, keys, max_keys, b.cache_row_count) || row < begin || row >= begin + keys) continue;
        const int64_t j = row - begin;
        for (int64_t head = kv_head * group; head < (kv_head + 1) * group; ++head) {
          const int64_t slot = (t - t0) * a.heads + head;
          const float* weights = workspace + slot * 2 * max_keys;
          const float* score_grads = weights + max_keys;
          const int64_t element = (t * a.heads + head) * hd + d;
          dv = add_rn(dv, mul_rn(weights[j], b.dout[element]));
          const float qk = mul_rn(attention_query_value(a.q[element], fp8_math, a.q_scale), grad.dk);
          dk = add_rn(dk, mul_rn(score_grads[j], qk));
        }
      }
      b.dk[index] = dk;
      b.dv[index] = dv;
    }
  }
}

// Tokens per backward chunk: the workspace holds 2 * max_key_count floats per (token, head).
int64_t backward_chunk_tokens(const AttentionArgs& a) {
  const int64_t per_token = a.heads * 2 * static_cast<int64_t>(a.max_key_count) * static_cast<int64_t>(sizeof(float));
  return std::clamp<int64_t>(kBackwardWorkspaceTarget / per_token, 1, a.tokens);
}

// The backward's workspace: one chunk's weights and score gradients, then the
// rows' candidate token ranges (first, end), each part 256-byte aligned.
struct BackwardWorkspace {
  float* chunk;    // [chunk tokens, heads, 2, max_key_count]
  int32_t* first;  // [cache_row_count]
  int32_t* end;    // [cache_row_count]
};

size_t aligned_bytes(size_t bytes) { return (bytes + 255) / 256 * 256; }

size_t backward_chunk_bytes(const AttentionArgs& a) {
  return aligned_bytes(
      static_cast<size_t>(backward_chunk_tokens(a) * a.heads * 2 * static_cast<int64_t>(a.max_key_count)) *
      sizeof(float));
}

size_t backward_row_bytes(const AttentionBackwardArgs& b) {
  return aligned_bytes(static_cast<size_t>(b.cache_row_count) * sizeof(int32_t));
}

BackwardWorkspace split_backward_workspace(const AttentionBackwardArgs& b, void* workspace) {
  auto* bytes = static_cast<unsigned char*>(workspace);
  const size_t chunk = backward_chunk_bytes(b.forward), rows = backward_row_bytes(b);
  return {reinterpret_cast<float*>(bytes), reinterpret_cast<int32_t*>(bytes + chunk),
          reinterpret_cast<int32_t*>(bytes + chunk + rows)};
}

template <typename T>
void launch_attention_typed(const AttentionArgs& args, const AttentionScales& scales, void* workspace,
                            cudaStream_t stream) {
  const size_t shared = static_cast<size_t>(args.head_dim) * sizeof(float);
  attention_kernel<T><<<grid_size(args.tokens * args.heads, kAttentionMaxCtas), kAttentionThreads, shared, stream>>>(
      args, scales, static_cast<float*>(workspace));
  check_launch("attention kernel launch");
}

template <typename T>
void launch_attention_backward_typed(const AttentionBackwardArgs& args, const AttentionScales& fwd,
                                     const AttentionGradScales& grad, void* workspace, cudaStream_t stream) {
  const AttentionArgs& a = args.forward;
  const int64_t chunk = backward_chunk_tokens(a);
  const size_t shared = static_cast<size_t>(a.head_dim) * sizeof(float);
  // Phase B: one warp per 32 dims, up to 256 threads (larger heads loop).
  const int kv_threads = static_cast<int>(std::clamp<int64_t>(ceil_div(a.head_dim, kWarp) * kWarp, kWarp, 256));
  const BackwardWorkspace ws = split_backward_workspace(args, workspace);
  const size_t row_bytes = static_cast<size_t>(args.cache_row_count) * sizeof(int32_t);
  for (int64_t t0 = 0; t0 < a.tokens; t0 += chunk) {
    const int64_t n = std::min(chunk, a.tokens - t0);
    attention_backward_rows_kernel<T>
        <<<grid_size(n * a.heads, kMaxGrid), kAttentionThreads, shared, stream>>>(args, fwd, grad, t0, n, ws.chunk);
    check_launch("attention_backward rows kernel launch");
    check_cuda(cudaMemsetAsync(ws.first, 0x7F, row_bytes, stream), "cudaMemsetAsync of attention_backward rows");
    check_cuda(cudaMemsetAsync(ws.end, 0, row_bytes, stream), "cudaMemsetAsync of attention_backward rows");
    attention_backward_row_tokens_kernel<<<grid_size(n, kMaxGrid), kAttentionThreads, 0, stream>>>(args, t0, n, ws.first,
                                                                                                 ws.end);
    check_launch("attention_backward row tokens kernel launch");
    attention_backward_kv_kernel<<<grid_size(args.cache_row_count * a.kv_heads, kMaxGrid), kv_threads, 0, stream>>>(
        args, grad, t0, ws.first, ws.end, ws.chunk);
    check_launch("attention_backward kv kernel launch");
  }
}

}  // namespace

void launch_kv_store(const KvStoreArgs& args, cudaStream_t stream) {
  if (args.tokens <= 0) return;
  constexpr int kThreads = 256;
  const unsigned grid = grid_size(ceil_div(args.tokens * args.kv_dim, kThreads), kMaxGrid);
  if (args.format == KvFormat::bf16)
    kv_store_kernel<<<grid, kThreads, 0, stream>>>(args.source, args.cache_rows, args.tokens, args.kv_dim, args.scale,
                                                   static_cast<uint16_t*>(args.cache));
  else
    kv_store_kernel<<<grid, kThreads, 0, stream>>>(args.source, args.cache_rows, args.tokens, args.kv_dim, args.scale,
                                                   static_cast<uint8_t*>(args.cache));
  check_launch("kv_store kernel launch");
}

size_t attention_workspace_bytes(const AttentionArgs& args) {
  if (args.tokens <= 0) return 0;
  const int64_t slots = std::min(args.tokens * args.heads, kAttentionMaxCtas);
  return static_cast<size_t>(slots) * static_cast<size_t>(args.max_key_count) * sizeof(float);
}

void launch_attention(const AttentionArgs& args, void* workspace, cudaStream_t stream) {
  if (args.tokens <= 0) return;
  // The CPU backend's limits (attention_cpu.cpp), so both refuse the same calls.
  require(args.heads / args.kv_heads <= kMaxGroup, "attention: more than 1024 query heads per kv head");
  require(args.head_dim <= kMaxHeadDim, "attention: head_dim above 8192");
  const bool e4m3 = args.kv_format == KvFormat::e4m3, fp8_math = args.math == AttentionMath::fp8;
  const AttentionScales scales =
      attention_scales(e4m3, fp8_math, args.q_scale, args.k_scale, args.v_scale, args.softmax_scale);
  if (e4m3)
    launch_attention_typed<uint8_t>(args, scales, workspace, stream);
  else
    launch_attention_typed<uint16_t>(args, scales, workspace, stream);
}

size_t attention_backward_workspace_bytes(const AttentionBackwardArgs& args) {
  if (args.forward.tokens <= 0) return 0;
  return backward_chunk_bytes(args.forward) + 2 * backward_row_bytes(args);
}

void launch_attention_backward(const AttentionBackwardArgs& args, void* workspace, cudaStream_t stream) {
  const AttentionArgs& a = args.forward;
  if (a.tokens <= 0) return;
  if (a.head_dim > kMaxHeadDim) fail(Status::unsupported, "attention_backward: head_dim above 8192 on CUDA");
  const bool e4m3 = a.kv_format == KvFormat::e4m3, fp8_math = a.math == AttentionMath::fp8;
  const AttentionScales fwd = attention_scales(e4m3, fp8_math, a.q_scale, a.k_scale, a.v_scale, a.softmax_scale);
  const AttentionGradScales grad =
      attention_grad_scales(e4m3, fp8_math, a.q_scale, a.k_scale, a.v_scale, a.softmax_scale);
  if (e4m3)
    launch_attention_backward_typed<uint8_t>(args, fwd, grad, workspace, stream);
  else
    launch_attention_backward_typed<uint16_t>(args, fwd, grad, workspace, stream);
}

}  // namespace fp8rl::cuda
