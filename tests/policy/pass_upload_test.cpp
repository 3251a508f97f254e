// The packed upload of a forward pass (core/policy/pass_upload.h): its arrays
// are aligned and disjoint, its device pointers hold what the batch says, and
// row inputs must match the wanted tokens.
#include "core/policy/pass_upload.h"

#include <doctest/doctest.h>

#include "core/policy/model_runner.h"
#include "policy_test_support.h"
#include "support/counting_backend.h"
#include "support/expect_error.h"

namespace fp8rl::test {

TEST_CASE("a pass's upload: aligned, disjoint arrays in layout order, ending at its size") {
  const size_t tokens = 37, rows = 5;
  const policy::PassUploadLayout l = policy::pass_upload_layout(tokens, rows, true, true);
  // Each array's offset and bytes.
  const std::vector<std::pair<size_t, size_t>> arrays = {
      {l.ids, tokens * 4},
      {l.positions, tokens * 4},
      {l.key_count, tokens * 4},
      {l.cache_rows, tokens * 8},
      {l.key_begin, tokens * 8},
      {l.logit_rows, rows * 8},
      {l.row_params, rows * sizeof(SamplingRow)},
      {l.row_targets, rows * 4},
  };
  CHECK(arrays.front().first == 0);
  for (size_t i = 0; i < arrays.size(); ++i) {
    CAPTURE(i);
    CHECK(arrays[i].first % kPackedAlignment == 0);
    if (i > 0) CHECK(arrays[i].first >= arrays[i - 1].first + arrays[i - 1].second);
  }
  CHECK(l.bytes == arrays.back().first + arrays.back().second);
  // Without row inputs, their arrays are empty.
  const policy::PassUploadLayout bare = policy::pass_upload_layout(tokens, rows, false, false);
  CHECK(bare.bytes == bare.logit_rows + rows * 8);
}

TEST_CASE("a pass's upload holds the batch's slice in one transfer") {
  CountingBackend backend;
  policy::TokenBatch batch;
  for (int32_t p = 0; p < 6; ++p) batch.add(100 + p, p, 40, p % 2 == 1);  // wanted: 1, 3, 5
  for (int32_t r = 0; r < 3; ++r) {
    SamplingRow row;
    row.uniform = 0.25 * r;
    batch.row_params.push_back(row);
    batch.row_targets.push_back(7 + r);
  }
  PackedBuffer buffer(backend);
  // Tokens [2, 6) hold wanted rows 1 and 2.
  const policy::PassIndices pass = policy::upload_pass(buffer, batch, 2, 6, 1, 2);
  CHECK(backend.counts().uploads == 1);
  CHECK(pass.max_key_count == 6);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(pass.ids[i] == 102 + static_cast<int32_t>(i));
    CHECK(pass.positions[i] == 2 + static_cast<int32_t>(i));
    CHECK(pass.key_count[i] == 3 + static_cast<int32_t>(i));
    CHECK(pass.key_begin[i] == 40);
    CHECK(pass.cache_rows[i] == 42 + static_cast<int64_t>(i));
  }
  CHECK(pass.logit_rows[0] == 1);  // tokens 3 and 5 of the batch, 1 and 3 of the pass
  CHECK(pass.logit_rows[1] == 3);
  CHECK(pass.row_params[0].uniform == 0.25);
  CHECK(pass.row_params[1].uniform == 0.5);
  CHECK(pass.row_targets[0] == 8);
  CHECK(pass.row_targets[1] == 9);
}

TEST_CASE("row inputs must be one per token wanting logits") {
  Context context(cpu_request(2), Logger());
  const model::ModelConfig config = tiny_llama();
  policy::Policy policy(context, tiny_params(config));
  policy::KvCache cache(context.backend(), policy.compiled(), model::kv_dim(config), 8);
  policy::TokenBatch batch;
  for (int32_t p = 0; p < 4; ++p) batch.add(p, p, 0, p == 3);
  batch.row_targets = {1, 2};
  auto run = [&] {
    policy.runner().run(policy.compiled(), policy.attention_scales(), batch, cache, policy::PassLimits{},
                        [](int64_t, int64_t, const float*) {});
  };
  expect_error(run, Status::invalid_argument, {"2 row targets for 1 tokens wanting logits"});
  batch.row_targets = {1};
  batch.row_params.resize(3);
  expect_error(run, Status::invalid_argument, {"3 row params for 1 tokens wanting logits"});
}

}  // namespace fp8rl::test
