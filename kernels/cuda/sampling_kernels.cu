// Sampling, token log-probabilities and the log-softmax backward
// (sampling_kernels.h). One CTA per row throughout: the CPU sums each row's
// weights sequentially in double, and reproducing its bits means running the
// same sequence of adds, so a row's sums are one thread's job (ordered_sum)
// while the CTA's other threads evaluate the terms, search the running sums
// and write the outputs.
//
// sample / token_logprobs run per chunk of rows:
//   1. prepare_kernel: argmax and refusals of each row; for rows with top-k or
//      top-p, one 64-bit key per token that sorts most likely first;
//   2. CUB's segmented radix sort of those rows' keys (other rows get empty
//      segments);
//   3. finish_kernel: Z (and Z_S), the top-p cut, the draw and the log-prob,
//      with the running sums stored in the sort's spare key buffer.
#include <algorithm>
#include <cmath>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <limits>

#include "../common/log_softmax_backward_math.h"
#include "../common/sampling_math.h"
#include "cuda_check.h"
#include "sampling_kernels.h"

namespace fp8rl::cuda {
namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xFFFFFFFFu;
constexpr int kThreads = 256;  // CTA size: one CTA per row
constexpr int kWarps = kThreads / kWarp;
// Upper bound on CTAs per launch; the kernels loop over the remaining rows.
constexpr int64_t kMaxGrid = 1 << 16;
// Terms staged in shared memory per round of an ordered sum (16 KiB).
constexpr int kStage = 2048;
// Logits per chunk of rows of sample / token_logprobs: bounds the workspace
// (16 bytes per logit) to 256 MiB unless one row is larger.
constexpr int64_t kChunkElements = int64_t{1} << 24;
constexpr size_t kAlign = 256;

enum RowState : int32_t {
  kBad = 0,     // refused by the CPU backend: token -1, log-prob NaN
  kGreedy = 1,  // temperature 0
  kPlain = 2,   // every token in index order
  kSorted = 3,  // top-k and / or top-p: most likely first, from the sort
};

struct RowInfo {
  int32_t argmax;  // lowest index of the largest logit
  int32_t state;   // RowState
};

struct Scratch {
  double stage[kStage];
  double total;
  float warp_value[kWarps];
  int32_t warp_index[kWarps];
  int32_t warp_bad[kWarps];
  long long warp_index64[kWarps];
};

unsigned grid_size(int64_t ctas) { return static_cast<unsigned>(std::clamp<int64_t>(ctas, 1, kMaxGrid)); }

size_t align_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Bits of a token index in a sort key: enough for vocab - 1.
int index_bits(int64_t vocab) {
  int bits = 0;
  while (bits < 63 && (int64_t{1} << bits) < vocab) ++bits;
  return bits;
}

// ---------------------------------------------------------------------------
// Block-level pieces. Each is called by all kThreads threads of the CTA, ends
// with __syncthreads (so Scratch may be reused at once) and returns the same
// value to every thread.

// a precedes b in the search for the argmax: larger logit, ties (including
// -0 == +0) to the lower index. NaN is never stored (such rows are refused).
__device__ __forceinline__ bool max_precedes(float value_a, int32_t a, float value_b, int32_t b) {
  return value_a > value_b || (value_a == value_b && a < b);
}

struct ArgMax {
  float value;    // the logit at index
  int32_t index;  // lowest index of the max; INT32_MAX if every logit is -Inf
  bool bad;       // a NaN or +Inf logit
};

// The CPU's checked_argmax scan: the lowest index among the maxima is unique,
// so a tree of max_precedes gives the same token as the ascending scan.
__device__ ArgMax block_argmax(const float* row, int64_t vocab, Scratch& s) {
  float best = -INFINITY;
  int32_t index = INT32_MAX;
  bool bad = false;
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {  // ascending: the first of equal maxima stays
    const float v = row[i];
    bad |= !(v == v) || v == INFINITY;
    if (v > best) {
      best = v;
      index = static_cast<int32_t>(i);
    }
  }
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const float other_value = __shfl_xor_sync(kFullMask, best, offset);
    const int32_t other_index = __shfl_xor_sync(kFullMask, index, offset);
    if (max_precedes(other_value, other_index, best, index)) {
      best = other_value;
      index = other_index;
    }
  }
  bad = __any_sync(kFullMask, bad);
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  if (threadIdx.x % kWarp == 0) {
    s.warp_value[warp] = best;
    s.warp_index[warp] = index;
    s.warp_bad[warp] = bad ? 1 : 0;
  }
  __syncthreads();
  ArgMax result{s.warp_value[0], s.warp_index[0], s.warp_bad[0] != 0};
  for (int w = 1; w < kWarps; ++w) {
    if (max_precedes(s.warp_value[w], s.warp_index[w], result.value, result.index)) {
      result.value = s.warp_value[w];
      result.index = s.warp_index[w];
    }
    result.bad |= s.warp_bad[w] != 0;
  }
  __syncthreads();
  return result;
}

// The min (kMin) or max of one int64 per thread.
template <bool kMin>
__device__ int64_t block_extreme(int64_t value, Scratch& s) {
  long long v = value;
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const long long other = __shfl_xor_sync(kFullMask, v, offset);
    v = kMin ? (other < v ? other : v) : (other > v ? other : v);
  }
  if (threadIdx.x % kWarp == 0) s.warp_index64[threadIdx.x / kWarp] = v;
  __syncthreads();
  long long result = s.warp_index64[0];
  for (int w = 1; w < kWarps; ++w) {
    const long long other = s.warp_index64[w];
    result = kMin ? (other < result ? other : result) : (other > result ? other : result);
  }
  __syncthreads();
  return result;
}

// The first j in [0, n) with pred(j), or n.
template <class Pred>
__device__ int64_t block_first(int64_t n, Pred pred, Scratch& s) {
  int64_t found = n;
  for (int64_t j = threadIdx.x; j < n; j += kThreads)
    if (pred(j)) {
      found = j;  // this thread's j ascend: its first hit is its smallest
      break;
    }
  return block_extreme<true>(found, s);
}

// The last j in [0, n) with pred(j), or -1.
template <class Pred>
__device__ int64_t block_last(int64_t n, Pred pred, Scratch& s) {
  int64_t found = -1;
  for (int64_t j = threadIdx.x; j < n; j += kThreads)
    if (pred(j)) found = j;
  return block_extreme<false>(found, s);
}

// sum_{j < n} term(j) as the CPU's loop `sum += term(j)` computes it: from +0,
// in ascending j, one IEEE double add at a time (__dadd_rn: never fused with
// the multiply of a term into an FMA). Thread 0 adds; all threads evaluate
// the terms, kStage at a time, into shared memory. term(j) is evaluated
// exactly once for each j (it may write an output). If prefix is not null,
// prefix[j] = the running sum after term(j), as the CPU's running sums.
template <class Term>
__device__ double ordered_sum(int64_t n, Term term, double* prefix, Scratch& s) {
  double running = 0.0;  // thread 0's
  for (int64_t base = 0; base < n; base += kStage) {
    const int len = static_cast<int>(n - base < kStage ? n - base : kStage);
    for (int t = static_cast<int>(threadIdx.x); t < len; t += kThreads) s.stage[t] = term(base + t);
    __syncthreads();
    if (threadIdx.x == 0)
      for (int t = 0; t < len; ++t) {
        running = __dadd_rn(running, s.stage[t]);
        s.stage[t] = running;
      }
    __syncthreads();
    if (prefix != nullptr)
      for (int t = static_cast<int>(threadIdx.x); t < len; t += kThreads) prefix[base + t] = s.stage[t];
    __syncthreads();  // stage is rewritten by the next round
  }
  if (threadIdx.x == 0) s.total = running;
  __syncthreads();
  const double total = s.total;
  __syncthreads();
  return total;
}

// ---------------------------------------------------------------------------
// sample / token_logprobs

// A 32-bit key whose ascending order is the logits' descending order, -0 and
// +0 equal. For a temperature T > 0, x = (double)logit / (double)T is
// strictly increasing in the logit: the float logits' relative spacing
// (>= 2^-24) survives one correctly rounded double division, and |x| stays
// within the normal doubles (2^-277 .. 2^277). So sorting on the logit
// orders by sampling_precedes() on x, ties and all, without the division.
__device__ __forceinline__ uint32_t descending_key(float logit) {
  uint32_t bits = __float_as_uint(logit);
  if ((bits & 0x7FFFFFFFu) == 0) bits = 0;                                            // -0 ties with +0
  const uint32_t ascending = (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;  // monotone in the value
  return ~ascending;
}

// Validates each row as the CPU does and finds its argmax; for rows with a
// filter, writes the sort keys (descending_key << index_bits | token: unique,
// so any correct sort yields the CPU's order) and the row's segment.
template <bool kSample>
__global__ void __launch_bounds__(kThreads)
    prepare_kernel(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params, const int32_t* targets,
                   int idx_bits, RowInfo* info, int* segment_begin, int* segment_end, uint64_t* keys) {
  __shared__ Scratch s;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const SamplingRow p = params[r];
    const float* row = logits + r * vocab;
    const ArgMax a = block_argmax(row, vocab, s);
    bool valid = sampling_row_error(p, kSample) == nullptr && !a.bad && a.value != -INFINITY;
    if constexpr (!kSample) valid = valid && targets[r] >= 0 && targets[r] < vocab;
    const int32_t state = !valid                                                        ? kBad
                          : sampling_is_greedy(p)                                       ? kGreedy
                          : sampling_top_k_active(p, vocab) || sampling_top_p_active(p) ? kSorted
                                                                                        : kPlain;
    if (threadIdx.x == 0) {
      info[r] = RowInfo{a.index, state};
      // Offsets within the chunk: rows * vocab <= max(kChunkElements, vocab) fits in int.
      segment_begin[r] = static_cast<int>(r * vocab);
      segment_end[r] = static_cast<int>(r * vocab + (state == kSorted ? vocab : 0));
    }
    if (state == kSorted) {
      uint64_t* row_keys = keys + r * vocab;
      for (int64_t i = threadIdx.x; i < vocab; i += kThreads)
        row_keys[i] = (static_cast<uint64_t>(descending_key(row[i])) << idx_bits) | static_cast<uint64_t>(i);
    }
  }
}

// prepare()'s distribution, the draw and logprob_of() of sampling_cpu.cpp.
// sorted: the chunk's sorted keys (rows in state kSorted); prefix: a spare
// double per logit for the running sums. tokens is null for token_logprobs.
template <bool kSample>
__global__ void __launch_bounds__(kThreads)
    finish_kernel(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params, const int32_t* targets,
                  int idx_bits, const RowInfo* info, const uint64_t* sorted, double* prefix_rows, int32_t* tokens,
                  float* logprobs) {
  __shared__ Scratch s;
  const uint64_t index_mask = (uint64_t{1} << idx_bits) - 1;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const RowInfo ri = info[r];
    const SamplingRow p = params[r];
    if (ri.state == kBad) {
      if (threadIdx.x == 0) {
        if (kSample) tokens[r] = -1;
        logprobs[r] = NAN;
      }
      continue;  // block-uniform; this row touches no shared memory
    }
    if (ri.state == kGreedy) {
      if (threadIdx.x == 0) {
        if (kSample) {
          tokens[r] = ri.argmax;
          logprobs[r] = 0.0f;
        } else {
          logprobs[r] = targets[r] == ri.argmax ? 0.0f : -INFINITY;
        }
      }
      continue;
    }
    const float* row = logits + r * vocab;
    const float temperature = p.temperature;
    const double m = sampling_scaled_logit(row[ri.argmax], temperature);  // max of x: x is monotone in the logit
    const bool ordered = ri.state == kSorted;
    const uint64_t* order = sorted + r * vocab;
    double* prefix = prefix_rows + r * vocab;
    // K's canonical order: index order, or most likely first.
    const auto token_at = [&](int64_t j) -> int32_t {
      return ordered ? static_cast<int32_t>(order[j] & index_mask) : static_cast<int32_t>(j);
    };
    const auto weight_at = [&](int64_t j) {
      return sampling_weight(sampling_scaled_logit(row[token_at(j)], temperature), m);
    };

    int64_t count = vocab;  // |K|
    double z = 0.0;         // Z: the sum over K in canonical order
    if (!ordered) {
      z = ordered_sum(vocab, weight_at, prefix, s);
    } else {
      const bool top_k = sampling_top_k_active(p, vocab);
      const int64_t candidates = top_k ? p.top_k : vocab;
      // The running sums over S most likely first: the CPU's w / cumulative.
      const double total = ordered_sum(candidates, weight_at, prefix, s);
      count = candidates;
      z = total;
      if (sampling_top_p_active(p)) {
        // Z_S in S's canonical order: after top-k that is the sum just taken
        // (the same adds); without top-k, index order.
        const double z_s =
            top_k
                ? total
                : ordered_sum(
                      vocab, [&](int64_t i) { return sampling_weight(sampling_scaled_logit(row[i], temperature), m); },
                      nullptr, s);
        const int64_t cut = block_first(
            candidates, [&](int64_t j) { return sampling_top_p_reached(prefix[j], z_s, p.top_p); }, s);
        count = cut < candidates ? cut + 1 : candidates;
        z = prefix[count - 1];  // the CPU's cumulative at the break (or after the last candidate)
      }
    }
    const double log_z = sampling_log(z);

    int32_t token = 0;
    if constexpr (kSample) {
      const double target = sampling_draw_target(p.uniform, z);
      int64_t j = block_first(
          count, [&](int64_t k) { return prefix[k] > target; }, s);
      if (j == count) {  // rounding left no token: the last of K with a non-zero weight (or the first)
        j = block_last(
            count, [&](int64_t k) { return weight_at(k) > 0.0; }, s);
        if (j < 0) j = 0;
      }
      token = token_at(j);
    } else {
      token = targets[r];
    }
    if (threadIdx.x == 0) {
      const double x = sampling_scaled_logit(row[token], temperature);
      float logprob = sampling_logprob(x, m, log_z);
      if (ordered) {  // K is a most-likely-first prefix: token is in it iff it does not come after K's last token
        const int32_t last = token_at(count - 1);
        if (token != last && !sampling_precedes(x, token, sampling_scaled_logit(row[last], temperature), last))
          logprob = -INFINITY;
      }
      if (kSample) tokens[r] = token;
      logprobs[r] = logprob;
    }
    // No barrier needed: the next row's running sums are another row's memory,
    // and every block function above ended with one before Scratch is reused.
  }
}

struct Layout {
  int64_t chunk_rows = 0;
  int idx_bits = 0;
  size_t info = 0, begin = 0, end = 0, keys_a = 0, keys_b = 0, temp = 0;
  size_t temp_bytes = 0;
  size_t total = 0;
};

size_t sort_temp_bytes(int64_t chunk_rows, int64_t vocab, int idx_bits) {
  cub::DoubleBuffer<uint64_t> keys(nullptr, nullptr);
  size_t bytes = 0;
  check_cuda(cub::DeviceSegmentedRadixSort::SortKeys(nullptr, bytes, keys, static_cast<int>(chunk_rows * vocab),
                                                     static_cast<int>(chunk_rows), static_cast<int*>(nullptr),
                                                     static_cast<int*>(nullptr), 0, 32 + idx_bits),
             "cub::DeviceSegmentedRadixSort::SortKeys (size query)");
  return bytes;
}

Layout sampling_layout(int64_t rows, int64_t vocab) {
  Layout l;
  l.chunk_rows = std::clamp<int64_t>(kChunkElements / vocab, 1, rows);
  l.idx_bits = index_bits(vocab);
  const size_t n = static_cast<size_t>(l.chunk_rows);
  const size_t elements = n * static_cast<size_t>(vocab);
  size_t offset = 0;
  const auto take = [&](size_t bytes) {
    const size_t at = offset;
    offset += align_up(bytes);
    return at;
  };
  l.info = take(n * sizeof(RowInfo));
  l.begin = take(n * sizeof(int));
  l.end = take(n * sizeof(int));
  l.keys_a = take(elements * sizeof(uint64_t));
  l.keys_b = take(elements * sizeof(uint64_t));  // also the running sums: sizeof(double) == sizeof(uint64_t)
  l.temp_bytes = std::max<size_t>(sort_temp_bytes(l.chunk_rows, vocab, l.idx_bits), kAlign);
  l.temp = take(l.temp_bytes);
  l.total = offset;
  return l;
}

template <bool kSample>
void run_sampling(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params, const int32_t* targets,
                  int32_t* tokens, float* logprobs, void* workspace, cudaStream_t stream) {
  if (rows <= 0) return;
  const Layout l = sampling_layout(rows, vocab);
  char* base = static_cast<char*>(workspace);
  RowInfo* info = reinterpret_cast<RowInfo*>(base + l.info);
  int* begin = reinterpret_cast<int*>(base + l.begin);
  int* end = reinterpret_cast<int*>(base + l.end);
  uint64_t* keys_a = reinterpret_cast<uint64_t*>(base + l.keys_a);
  uint64_t* keys_b = reinterpret_cast<uint64_t*>(base + l.keys_b);
  for (int64_t r0 = 0; r0 < rows; r0 += l.chunk_rows) {
    const int64_t n = std::min(l.chunk_rows, rows - r0);
    const float* chunk_logits = logits + r0 * vocab;
    const int32_t* chunk_targets = kSample ? nullptr : targets + r0;
    prepare_kernel<kSample><<<grid_size(n), kThreads, 0, stream>>>(chunk_logits, n, vocab, params + r0, chunk_targets,
                                                                   l.idx_bits, info, begin, end, keys_a);
    check_launch("sampling prepare_kernel");
    // Rows without a filter have empty segments: the sort leaves them alone.
    cub::DoubleBuffer<uint64_t> keys(keys_a, keys_b);
    size_t temp_bytes = l.temp_bytes;
    check_cuda(cub::DeviceSegmentedRadixSort::SortKeys(base + l.temp, temp_bytes, keys, static_cast<int>(n * vocab),
                                                       static_cast<int>(n), begin, end, 0, 32 + l.idx_bits, stream),
               "cub::DeviceSegmentedRadixSort::SortKeys");
    // keys.Current() holds the sorted keys; the other buffer is free for the running sums.
    finish_kernel<kSample><<<grid_size(n), kThreads, 0, stream>>>(
        chunk_logits, n, vocab, params + r0, chunk_targets, l.idx_bits, info, keys.Current(),
        reinterpret_cast<double*>(keys.Alternate()), kSample ? tokens + r0 : nullptr, logprobs + r0);
    check_launch("sampling finish_kernel");
  }
}

// ---------------------------------------------------------------------------
// log_softmax_backward: log_softmax_backward_rows of backward_cpu.cpp.

__global__ void __launch_bounds__(kThreads)
    log_softmax_backward_kernel(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                                const int32_t* targets, const float* coef, float* dlogits, float* entropy) {
  __shared__ Scratch s;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const SamplingRow p = params[r];
    const int32_t target = targets[r];
    const float* row = logits + r * vocab;
    float* out = dlogits + r * vocab;  // may alias row: each pass reads element i before anyone writes it
    const ArgMax a = block_argmax(row, vocab, s);
    const bool valid = sampling_row_error(p, false) == nullptr && p.temperature > 0.0f && target >= 0 &&
                       target < vocab && !a.bad && a.value != -INFINITY;
    if (!valid) {  // block-uniform; block_argmax's last barrier ordered every read of the row before these writes
      for (int64_t i = threadIdx.x; i < vocab; i += kThreads) out[i] = NAN;
      if (threadIdx.x == 0) entropy[r] = NAN;
      continue;
    }
    const float temperature = p.temperature;
    // a.value is the logit at the lowest argmax: the CPU's `best`, bit for bit.
    const double t = temperature, m = sampling_scaled_logit(a.value, temperature);
    const double z = ordered_sum(
        vocab, [&](int64_t i) { return sampling_weight(sampling_scaled_logit(row[i], temperature), m); }, nullptr, s);
    const double log_z = sampling_log(z), g = coef[r];
    // ordered_sum's barriers put every read of the first pass before the writes of the second.
    const double h = ordered_sum(
        vocab,
        [&](int64_t i) {
          const double x = sampling_scaled_logit(row[i], temperature);
          const double prob = log_softmax_prob(x, m, z);
          out[i] = log_softmax_logit_grad(prob, i == target, g, t);
          return log_softmax_entropy_term(prob, x, m, log_z);
        },
        nullptr, s);
    if (threadIdx.x == 0) entropy[r] = static_cast<float>(h);
  }
}

}  // namespace

size_t sampling_workspace_bytes(int64_t rows, int64_t vocab) {
  if (rows <= 0) return 0;
  return sampling_layout(rows, vocab).total;
}

void launch_sample(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params, int32_t* tokens,
                   float* logprobs, void* workspace, cudaStream_t stream) {
  run_sampling<true>(logits, rows, vocab, params, nullptr, tokens, logprobs, workspace, stream);
}

void launch_token_logprobs(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                           const int32_t* targets, float* logprobs, void* workspace, cudaStream_t stream) {
  run_sampling<false>(logits, rows, vocab, params, targets, nullptr, logprobs, workspace, stream);
}

void launch_log_softmax_backward(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                                 const int32_t* targets, const float* coef, float* dlogits, float* entropy,
                                 cudaStream_t stream) {
  if (rows <= 0) return;
  log_softmax_backward_kernel<<<grid_size(rows), kThreads, 0, stream>>>(logits, rows, vocab, params, targets, coef,
                                                                        dlogits, entropy);
  check_launch("log_softmax_backward_kernel");
}

}  // namespace fp8rl::cuda
