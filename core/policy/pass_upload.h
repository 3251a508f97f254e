// The one upload of a forward pass. Everything a pass's kernels read besides
// weights, cache and activations (per-token ids, positions, cache rows, key
// ranges; the rows wanting logits and their sampling or scoring inputs) is
// staged on the host in one packed buffer and moved in one Backend::upload:
// on a GPU, one synchronization per pass instead of one per array.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/policy/packed_buffer.h"
#include "core/policy/token_batch.h"

namespace fp8rl::policy {

// Byte offsets of a pass's arrays in its buffer (PackedLayout), in this order.
struct PassUploadLayout {
  size_t ids;          // int32 [tokens]
  size_t positions;    // int32 [tokens]
  size_t key_count;    // int32 [tokens] position + 1: keys the token attends to
  size_t cache_rows;   // int64 [tokens] key_begin + position: where its K/V go
  size_t key_begin;    // int64 [tokens]
  size_t logit_rows;   // int64 [rows] the pass's index of each token wanting logits
  size_t row_params;   // SamplingRow [rows], or none (TokenBatch::row_params)
  size_t row_targets;  // int32 [rows], or none (TokenBatch::row_targets)
  size_t bytes;        // the whole upload
};

PassUploadLayout pass_upload_layout(size_t tokens, size_t rows, bool params, bool targets);

// The arrays of the last pass in backend memory, pointing into its buffer.
struct PassIndices {
  const int32_t* ids = nullptr;             // [tokens]
  const int32_t* positions = nullptr;       // [tokens]
  const int32_t* key_count = nullptr;       // [tokens]
  const int64_t* cache_rows = nullptr;      // [tokens]
  const int64_t* key_begin = nullptr;       // [tokens]
  const int64_t* logit_rows = nullptr;      // [rows]
  const SamplingRow* row_params = nullptr;  // [rows]; null when the batch has none
  const int32_t* row_targets = nullptr;     // [rows]; null when the batch has none
  int32_t max_key_count = 0;
};

// Stages tokens [begin, end) of batch, whose wanted tokens are its wanted
// rows [first_row, first_row + rows), into buffer and uploads them in one call.
PassIndices upload_pass(PackedBuffer& buffer, const TokenBatch& batch, size_t begin, size_t end, size_t first_row,
                        size_t rows);

}  // namespace fp8rl::policy
