#include "core/policy/pass_upload.h"

#include <algorithm>
#include <cstring>

namespace fp8rl::policy {
namespace {

template <class T>
void copy_to(PackedBuffer& buffer, size_t offset, const T* values, size_t count) {
  if (count) std::memcpy(buffer.host<T>(offset), values, count * sizeof(T));
}

// Writes the arrays the pass derives from the batch; returns the largest key count.
int32_t stage_derived(PackedBuffer& buffer, const PassUploadLayout& layout, const TokenBatch& batch, size_t begin,
                      size_t end) {
  int32_t* key_count = buffer.host<int32_t>(layout.key_count);
  int64_t* cache_rows = buffer.host<int64_t>(layout.cache_rows);
  int64_t* logit_rows = buffer.host<int64_t>(layout.logit_rows);
  int32_t max_key_count = 0;
  for (size_t t = begin, row = 0; t < end; ++t) {
    cache_rows[t - begin] = batch.key_begin[t] + batch.positions[t];
    key_count[t - begin] = batch.positions[t] + 1;
    max_key_count = std::max(max_key_count, batch.positions[t] + 1);
    if (batch.wants_logits[t]) logit_rows[row++] = static_cast<int64_t>(t - begin);
  }
  return max_key_count;
}

PassIndices device_view(PackedBuffer& buffer, const PassUploadLayout& layout, bool params, bool targets,
                        int32_t max_key_count) {
  PassIndices pass;
  pass.ids = buffer.device<int32_t>(layout.ids);
  pass.positions = buffer.device<int32_t>(layout.positions);
  pass.key_count = buffer.device<int32_t>(layout.key_count);
  pass.cache_rows = buffer.device<int64_t>(layout.cache_rows);
  pass.key_begin = buffer.device<int64_t>(layout.key_begin);
  pass.logit_rows = buffer.device<int64_t>(layout.logit_rows);
  pass.row_params = params ? buffer.device<SamplingRow>(layout.row_params) : nullptr;
  pass.row_targets = targets ? buffer.device<int32_t>(layout.row_targets) : nullptr;
  pass.max_key_count = max_key_count;
  return pass;
}

}  // namespace

PassUploadLayout pass_upload_layout(size_t tokens, size_t rows, bool params, bool targets) {
  PackedLayout packed;
  PassUploadLayout layout;
  layout.ids = packed.add<int32_t>(tokens);
  layout.positions = packed.add<int32_t>(tokens);
  layout.key_count = packed.add<int32_t>(tokens);
  layout.cache_rows = packed.add<int64_t>(tokens);
  layout.key_begin = packed.add<int64_t>(tokens);
  layout.logit_rows = packed.add<int64_t>(rows);
  layout.row_params = packed.add<SamplingRow>(params ? rows : 0);
  layout.row_targets = packed.add<int32_t>(targets ? rows : 0);
  layout.bytes = packed.bytes();
  return layout;
}

PassIndices upload_pass(PackedBuffer& buffer, const TokenBatch& batch, size_t begin, size_t end, size_t first_row,
                        size_t rows) {
  const size_t tokens = end - begin;
  const bool params = !batch.row_params.empty(), targets = !batch.row_targets.empty();
  const PassUploadLayout layout = pass_upload_layout(tokens, rows, params, targets);
  buffer.reserve(layout.bytes);
  copy_to(buffer, layout.ids, batch.token_ids.data() + begin, tokens);
  copy_to(buffer, layout.positions, batch.positions.data() + begin, tokens);
  copy_to(buffer, layout.key_begin, batch.key_begin.data() + begin, tokens);
  if (params) copy_to(buffer, layout.row_params, batch.row_params.data() + first_row, rows);
  if (targets) copy_to(buffer, layout.row_targets, batch.row_targets.data() + first_row, rows);
  const int32_t max_key_count = stage_derived(buffer, layout, batch, begin, end);
  buffer.upload(layout.bytes);
  return device_view(buffer, layout, params, targets, max_key_count);
}

}  // namespace fp8rl::policy
