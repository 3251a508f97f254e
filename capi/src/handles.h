// What the opaque handles of the C API hold.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/dist/communicator.h"
#include "core/policy/policy.h"
#include "core/text/tokenizer.h"
#include "core/train/trainer.h"

// A reference to a communicator: contexts created with it hold their own.
struct fp8rl_communicator {
  std::shared_ptr<fp8rl::dist::Communicator> impl;
};

struct fp8rl_context {
  fp8rl::Context impl;
  // Policies created on this context and not yet destroyed: a policy keeps a
  // reference to the context, so fp8rl_context_destroy refuses while any live.
  std::atomic<int64_t> live_policies{0};
};

struct fp8rl_policy {
  fp8rl_context* context;  // the owner; outlives the policy (live_policies)
  std::unique_ptr<fp8rl::policy::Policy> impl;
  // Trainers bound to this policy: fp8rl_policy_destroy refuses while any live.
  std::atomic<int64_t> live_trainers{0};
  // The folder fp8rl_policy_load read (absolute), where fp8rl_policy_load_tokenizer
  // finds tokenizer.json; empty for a policy created otherwise.
  std::string folder;
};

struct fp8rl_trainer {
  fp8rl_policy* policy;  // outlives the trainer (live_trainers)
  std::unique_ptr<fp8rl::train::Trainer> impl;
};

// Completions in flat arrays: completion i is [offsets[i], offsets[i + 1]) of
// tokens and logprobs. Owned copies, independent of the policy and context.
struct fp8rl_rollout {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::vector<int64_t> offsets;  // [count + 1]
  std::vector<fp8rl_finish_reason> finish;
  double seconds = 0.0;  // generation wall time
  // Recorded expert choices (record_experts), completion i's [positions,
  // sparse_layers, top_k] at [expert_offsets[i], expert_offsets[i + 1]).
  std::vector<int32_t> experts;
  std::vector<int64_t> expert_offsets;  // [count + 1]
  int64_t sparse_layers = 0;
  int64_t top_k = 0;
};

// Immutable after loading, so any number of threads may use one at once.
struct fp8rl_tokenizer {
  fp8rl::text::Tokenizer impl;
};

// The ids of several texts: text i is [offsets[i], offsets[i + 1]) of ids.
struct fp8rl_encoding {
  std::vector<int32_t> ids;
  std::vector<int64_t> offsets;  // [count + 1]
};

namespace fp8rl::capi {

inline Context& context_of(fp8rl_context* handle) {
  require(handle != nullptr, "context is NULL");
  return handle->impl;
}

inline const Context& context_of(const fp8rl_context* handle) {
  require(handle != nullptr, "context is NULL");
  return handle->impl;
}

inline policy::Policy& policy_of(const fp8rl_policy* handle) {
  require(handle != nullptr, "policy is NULL");
  return *handle->impl;
}

inline train::Trainer& trainer_of(const fp8rl_trainer* handle) {
  require(handle != nullptr, "trainer is NULL");
  return *handle->impl;
}

inline const text::Tokenizer& tokenizer_of(const fp8rl_tokenizer* handle) {
  require(handle != nullptr, "tokenizer is NULL");
  return handle->impl;
}

inline const fp8rl_encoding& encoding_of(const fp8rl_encoding* handle) {
  require(handle != nullptr, "encoding is NULL");
  return *handle;
}

inline const fp8rl_rollout& rollout_of(const fp8rl_rollout* handle) {
  require(handle != nullptr, "rollout is NULL");
  return *handle;
}

}  // namespace fp8rl::capi
