// Sampling, token log-probabilities and the log-softmax backward on the GPU
// (kernels/backend.h). The distribution of a row is sampling_math.h's, and
// every number the CPU backend (kernels/cpu/sampling_cpu.cpp,
// backward_cpu.cpp) computes is computed here with the same kernels/common
// functions in the same order:
//   - the max / argmax is a block reduction on (logit desc, index asc), whose
//     result is unique, so it equals the CPU's sequential scan;
//   - every double sum the CPU runs sequentially (Z, Z_S, the running sums
//     of the draw and of top-p, the entropy) is run sequentially here too, by
//     one thread of the row's CTA, the others computing the terms a chunk
//     ahead into shared memory (slow, but the CPU's bits);
//   - the most-likely-first order is a full segmented radix sort of unique
//     64-bit keys (logit desc, index asc), so it is the CPU's order exactly;
//   - first / last index searches over the stored running sums are block
//     min / max reductions (unique results).
// Double adds go through __dadd_rn, so nvcc never fuses them into an FMA.
//
// Bit-exactness: tokens and log-probs are the CPU's bits provided CUDA's
// double exp() and log() return glibc's bits for the same arguments. Both are
// within 1 ulp, not correctly rounded, so an occasional last-bit difference
// in one weight is possible; it changes a result only if it moves a float
// rounding of a log-prob (odds ~2^-28 per value), a draw or top-p boundary
// (~2^-50). Exact ties (equal logits, exp(0) = 1) are exact on both.
//
// Per-row refusals the CPU makes (invalid SamplingRow, NaN / +Inf logits, an
// all -Inf row, a target outside [0, vocab), temperature 0 in the backward)
// cannot throw here: those rows come out as token -1 and log-prob NaN (NaN
// dlogits and entropy for the backward), and other rows are unaffected.
// Arguments are validated by the backend (check_sampling_args,
// check_log_softmax_backward_args) before these are called; rows == 0
// enqueues nothing.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "../transformer_ops.h"

namespace fp8rl::cuda {

// Bytes of workspace launch_sample and launch_token_logprobs need for rows of
// vocab logits: per chunk of rows, two 64-bit sort keys per logit (one of
// them later holds the running sums), row descriptors and CUB's scratch.
// Bounded by about 256 MiB unless a single row needs more. 0 when rows is 0.
size_t sampling_workspace_bytes(int64_t rows, int64_t vocab);

// Draws tokens[r] from the distribution params[r] defines over logits[r, :]
// at params[r].uniform and writes its log-probability. logits [rows, vocab];
// params, tokens, logprobs [rows]. Tokens and log-probs bit-identical to the
// CPU's (see above). workspace: sampling_workspace_bytes(rows, vocab).
void launch_sample(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params, int32_t* tokens,
                   float* logprobs, void* workspace, cudaStream_t stream);

// logprobs[r] = log p(targets[r]) under params[r] (-inf outside the support),
// bitwise what launch_sample reports for that token. logits [rows, vocab];
// params, targets, logprobs [rows]. workspace: sampling_workspace_bytes(rows, vocab).
void launch_token_logprobs(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                           const int32_t* targets, float* logprobs, void* workspace, cudaStream_t stream);

// dlogits[r, :] = coef[r] * (onehot(targets[r]) - softmax(logits[r, :] / T)) / T
// and entropy[r] (log_softmax_backward_math.h), full softmax. logits, dlogits
// [rows, vocab] (may alias); params, targets, coef, entropy [rows]. One CTA
// per row; Z and the entropy summed in index order by one thread: dlogits
// and entropy bit-identical to the CPU's (same exp/log caveat). No workspace.
void launch_log_softmax_backward(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                                 const int32_t* targets, const float* coef, float* dlogits, float* entropy,
                                 cudaStream_t stream);

}  // namespace fp8rl::cuda
