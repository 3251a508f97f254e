// A batch of completion tokens owned by the test, viewed as a TokenBatch.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "core/train/loss_options.h"

namespace fp8rl::test {

struct TokenRow {
  float logp, logp_old, logp_gen, logp_ref, advantage;
  uint8_t mask = 1;
};

struct OwnedBatch {
  std::vector<int64_t> offsets{0};
  std::vector<float> logp, logp_old, logp_gen, logp_ref, advantages;
  std::vector<uint8_t> mask;

  void add(std::initializer_list<TokenRow> rows) { add(std::vector<TokenRow>(rows)); }
  void add(const std::vector<TokenRow>& rows) {
    for (const TokenRow& row : rows) {
      logp.push_back(row.logp);
      logp_old.push_back(row.logp_old);
      logp_gen.push_back(row.logp_gen);
      logp_ref.push_back(row.logp_ref);
      advantages.push_back(row.advantage);
      mask.push_back(row.mask);
    }
    offsets.push_back(static_cast<int64_t>(logp.size()));
  }
  train::TokenBatch view(bool with_reference = true) const {
    train::TokenBatch batch;
    batch.offsets = offsets.data();
    batch.count = static_cast<int64_t>(offsets.size()) - 1;
    batch.logp = logp.data();
    batch.logp_old = logp_old.data();
    batch.logp_gen = logp_gen.data();
    batch.logp_ref = with_reference ? logp_ref.data() : nullptr;
    batch.advantages = advantages.data();
    batch.mask = mask.data();
    return batch;
  }
  size_t size() const { return logp.size(); }
};

}  // namespace fp8rl::test
