// The memory plan (core/dist/memory_plan.h) against independent expectations:
// every field of one tiny model worked out by hand; each rank's trainer in
// data-parallel runs of 2 and 3 ranks (threads); the bytes the compute,
// transposed and KV-cache arrays actually hold; the optimizer shards of
// 1..64 ranks adding up to the whole; and the Llama-3.1-8B and 70B shapes,
// planned in milliseconds with their published parameter counts.
#include <doctest/doctest.h>

#include <chrono>
#include <map>

#include "core/dist/memory_plan.h"
#include "core/policy/compiled_model.h"
#include "core/policy/kv_cache.h"
#include "core/train/transposed_model.h"
#include "dist/dist_test_support.h"
#include "kernels/cpu/cpu_backend.h"
#include "support/forwarding_backend.h"

namespace fp8rl::test {
namespace {

policy::Recipe fp8_recipe() {
  policy::Recipe r;
  r.linear = policy::Precision::fp8;
  return r;
}

// FP8 linears, KV cache and attention, with the first and last layer kept BF16.
policy::Recipe fp8_edges_recipe() {
  policy::Recipe r = fp8_recipe();
  r.kv_cache = policy::Precision::fp8;
  r.attention = policy::Precision::fp8;
  r.bf16_first_layers = 1;
  r.bf16_last_layers = 1;
  return r;
}

// FP8 linears and LM head.
policy::Recipe fp8_head_recipe() {
  policy::Recipe r = fp8_recipe();
  r.head = policy::Precision::fp8;
  return r;
}

// Llama-3.1-8B and -70B as their Hugging Face config.json have them.
model::ModelConfig llama31(int64_t hidden, int64_t layers, int64_t heads, int64_t intermediate) {
  model::ModelConfig c;
  c.family = model::ModelFamily::llama;
  c.vocab_size = 128256;
  c.hidden_size = hidden;
  c.num_layers = layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = 8;
  c.head_dim = 128;
  c.intermediate_size = intermediate;
  c.max_position_embeddings = 131072;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 500000.0;
  c.eos_token_ids = {128001};
  return c;
}
model::ModelConfig llama31_8b() { return llama31(4096, 32, 32, 14336); }
model::ModelConfig llama31_70b() { return llama31(8192, 80, 64, 28672); }

// Counts the bytes live on the CPU backend it wraps.
class AllocationCountingBackend : public ForwardingBackend {
 public:
  AllocationCountingBackend() : ForwardingBackend(make_cpu_backend(1)) {}
  int64_t live_bytes() const { return live_; }
  void* allocate(size_t bytes) override {
    void* p = ForwardingBackend::allocate(bytes);
    sizes_[p] = static_cast<int64_t>(bytes);
    live_ += static_cast<int64_t>(bytes);
    return p;
  }
  void deallocate(void* pointer) noexcept override {
    const auto it = sizes_.find(pointer);
    if (it != sizes_.end()) {
      live_ -= it->second;
      sizes_.erase(it);
    }
    ForwardingBackend::deallocate(pointer);
  }

 private:
  std::map<void*, int64_t> sizes_;
  int64_t live_ = 0;
};

// The bytes a linear layer's compute arrays hold, read off the arrays.
int64_t held(const policy::LinearWeights& l) {
  return static_cast<int64_t>(l.bf16.size() * 2 + l.f32.size() * 4 + l.codes.size() + l.scales.size() * 4 +
                              l.bias.size() * 4);
}

void check_equal(const dist::MemoryReport& a, const dist::MemoryReport& b) {
  CHECK(a.master_weights == b.master_weights);
  CHECK(a.compute_weights == b.compute_weights);
  CHECK(a.gradients == b.gradients);
  CHECK(a.optimizer_state == b.optimizer_state);
  CHECK(a.backward_weights == b.backward_weights);
  CHECK(a.kv_cache == b.kv_cache);
}

}  // namespace

// tiny_qwen2: vocab 301, hidden 160, 3 layers, q_dim 160, kv_dim 80,
// intermediate 200, q/k/v biases, tied embeddings.
//   weights: embed 301*160 = 48160; per layer: norms 2*160, q 160*160 =
//   25600 + 160 bias, k and v 80*160 = 12800 + 80 bias each, o 25600,
//   gate/up/down 200*160 = 32000 each: 173440; final norm 160.
//   parameters = 48160 + 3 * 173440 + 160 = 568640.
//   arena (each tensor padded to 128 elements): 48256 + 3 * (256 + 25600 +
//   256 + 12800 + 128 + 12800 + 128 + 25600 + 256 + 3 * 32000) + 256
//   = 48256 + 3 * 173824 + 256 = 569984 elements.
//   linear weight elements per layer: 25600 + 2 * 12800 + 25600 + 3 * 32000 = 172800;
//   128x128 block scales per layer: q 2x2, k 1x2, v 1x2, o 2x2, gate 2x2, up 2x2, down 2x2 = 24.
TEST_CASE("memory plan: every field of a tiny model, worked out by hand") {
  const model::ModelConfig config = tiny_qwen2();
  REQUIRE(model::parameter_count(config) == 568640);
  const int64_t masters = 568640 * 4 + 569984 * 4;  // host copy + arena
  const int64_t per_layer_norms_and_biases = 2 * 160 * 4 + (160 + 80 + 80) * 4;

  SUBCASE("BF16") {
    const dist::MemoryReport plan = dist::plan_memory(config, policy::Recipe{}, 1, 0, 100);
    CHECK(plan.master_weights == masters);
    // embeddings (tied: once) BF16 + final norm FP32 + per layer: norms, biases, BF16 linears
    CHECK(plan.compute_weights == 48160 * 2 + 160 * 4 + 3 * (per_layer_norms_and_biases + 172800 * 2));
    CHECK(plan.gradients == 569984 * 4);
    CHECK(plan.optimizer_state == 2 * 569984 * 4);
    // the head's W^T [160, 301] BF16, and each linear's W^T without bias
    CHECK(plan.backward_weights == 48160 * 2 + 3 * 172800 * 2);
    CHECK(plan.kv_cache == 100 * 3 * 2 * 80 * 2);  // tokens * layers * (K, V) * kv_dim * BF16
  }
  SUBCASE("FP8 linears") {
    const dist::MemoryReport plan = dist::plan_memory(config, fp8_recipe(), 1, 0, 100);
    CHECK(plan.master_weights == masters);
    CHECK(plan.compute_weights == 48160 * 2 + 160 * 4 + 3 * (per_layer_norms_and_biases + 172800 + 24 * 4));
    CHECK(plan.gradients == 569984 * 4);
    CHECK(plan.optimizer_state == 2 * 569984 * 4);
    CHECK(plan.backward_weights == 48160 * 2 + 3 * (172800 + 24 * 4));
    CHECK(plan.kv_cache == 100 * 3 * 2 * 80 * 2);  // the KV cache stays BF16
  }
  SUBCASE("FP8 linears and KV cache, first and last layer kept BF16") {
    const dist::MemoryReport plan = dist::plan_memory(config, fp8_edges_recipe(), 1, 0, 100);
    CHECK(plan.compute_weights ==
          48160 * 2 + 160 * 4 + 3 * per_layer_norms_and_biases + 2 * 172800 * 2 + (172800 + 24 * 4));
    CHECK(plan.backward_weights == 48160 * 2 + 2 * 172800 * 2 + (172800 + 24 * 4));
    CHECK(plan.kv_cache == 100 * (2 * 2 * 80 * 2 + 2 * 80 * 1));  // layers 0 and 2 BF16, layer 1 E4M3
  }
  SUBCASE("FP8 head only, tied: the embeddings stay BF16 for lookups beside the head's own E4M3 copy") {
    policy::Recipe head_only;
    head_only.head = policy::Precision::fp8;
    const dist::MemoryReport plan = dist::plan_memory(config, head_only, 1, 0, 100);
    // the head [301, 160]: 48160 codes and 3 x 2 block scales, forward and transposed alike
    CHECK(plan.compute_weights ==
          48160 * 2 + (48160 + 6 * 4) + 160 * 4 + 3 * (per_layer_norms_and_biases + 172800 * 2));
    CHECK(plan.backward_weights == (48160 + 6 * 4) + 3 * 172800 * 2);
  }
  SUBCASE("no KV cache") { CHECK(dist::plan_memory(config, policy::Recipe{}, 1, 0, 0).kv_cache == 0); }
}

TEST_CASE("memory plan: one rank's plan is what its policy and trainer hold, Mixture-of-Experts included") {
  for (const NamedConfig& named : forward_configs()) {
    for (const policy::Recipe& recipe : {policy::Recipe{}, fp8_recipe(), fp8_edges_recipe(), fp8_head_recipe()}) {
      CAPTURE(named.name);
      CAPTURE(policy::describe_recipe(recipe));
      Context context(cpu_request(1), Logger());
      policy::Policy policy(context, tiny_params(named.config), recipe);
      dist::MemoryReport plan = dist::plan_memory(named.config, recipe, 1, 0, 0);
      const dist::MemoryReport alone = dist::policy_memory(policy);
      CHECK(alone.master_weights == model::parameter_count(named.config) * 4);
      CHECK(alone.compute_weights == plan.compute_weights);
      train::Trainer trainer(policy, dp_options());
      check_equal(dist::trainer_memory(policy, trainer), plan);
    }
  }
}

TEST_CASE("memory plan: rank r of 2 and 3 data-parallel ranks holds what the plan says") {
  const model::ModelConfig config = tiny_qwen2();
  for (const int world : {2, 3}) {
    for (const policy::Recipe& recipe : {policy::Recipe{}, fp8_recipe(), fp8_head_recipe()}) {
      CAPTURE(world);
      CAPTURE(policy::describe_recipe(recipe));
      std::vector<dist::MemoryReport> held_by(static_cast<size_t>(world));
      run_ranks(world, [&](int rank, Context& context) {
        policy::Policy policy(context, tiny_params(config, 11 + static_cast<uint64_t>(rank)), recipe);
        train::Trainer trainer(policy, dp_options());
        held_by[static_cast<size_t>(rank)] = dist::trainer_memory(policy, trainer);
      });
      int64_t optimizer = 0;
      for (int rank = 0; rank < world; ++rank) {
        CAPTURE(rank);
        check_equal(held_by[static_cast<size_t>(rank)], dist::plan_memory(config, recipe, world, rank, 0));
        optimizer += held_by[static_cast<size_t>(rank)].optimizer_state;
      }
      CHECK(optimizer == 2 * 569984 * 4);  // the whole arena's moments, by hand (above)
    }
  }
}

TEST_CASE("memory plan: the compute, transposed and KV-cache arrays hold the planned bytes, experts included") {
  for (const NamedConfig& named : forward_configs()) {
    for (const policy::Recipe& recipe : {policy::Recipe{}, fp8_recipe(), fp8_edges_recipe(), fp8_head_recipe()}) {
      CAPTURE(named.name);
      CAPTURE(policy::describe_recipe(recipe));
      const model::ModelConfig& c = named.config;
      Context context(cpu_request(1), Logger());
      policy::Policy policy(context, tiny_params(c), recipe);
      const policy::CompiledModel& compiled = policy.compiled();

      // Read off the arrays: embeddings BF16, the head's own copy if any, final norm FP32.
      int64_t compute = c.vocab_size * c.hidden_size * 2 + held(compiled.head_weights()) + c.hidden_size * 4;
      for (const policy::CompiledLayer& layer : compiled.layers()) {
        for (const DeviceArray<float>& norm : layer.norms) compute += static_cast<int64_t>(norm.size() * 4);
        for (const policy::LinearWeights& linear : layer.linears) compute += held(linear);
        for (const policy::CompiledExpert& expert : layer.experts)
          for (const policy::LinearWeights& linear : expert.linears) compute += held(linear);
      }
      CHECK(compute == policy::compute_weight_bytes(c, recipe));
      CHECK(compiled.bytes() == compute);

      AllocationCountingBackend counting;
      {
        const train::TransposedModel transposed(counting, compiled);
        CHECK(counting.live_bytes() == train::transposed_weight_bytes(c, recipe));
        CHECK(transposed.bytes() == counting.live_bytes());
      }
      {
        const policy::KvCache cache(counting, compiled, model::kv_dim(c), 37);
        CHECK(counting.live_bytes() == policy::kv_cache_bytes(c, recipe, 37));
        CHECK(counting.live_bytes() == dist::plan_memory(c, recipe, 1, 0, 37).kv_cache);
      }
    }
  }
}

TEST_CASE("memory plan: the optimizer shards add up to the whole and shrink as 1/N") {
  // The largest step between shard points: a 128-row band of the widest
  // matrix, plus the padding before the next tensor (< 128 elements).
  struct Case {
    const char* name;
    model::ModelConfig config;
    int64_t band_elements;
  };
  const std::vector<Case> cases = {{"tiny qwen2", tiny_qwen2(), 128 * 200 + 128},
                                   {"Llama-3.1-8B", llama31_8b(), 128 * 14336 + 128}};
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const dist::MemoryReport one = dist::plan_memory(c.config, policy::Recipe{}, 1, 0, 0);
    for (const int world : {2, 3, 5, 8, 64}) {
      CAPTURE(world);
      int64_t sum = 0;
      for (int rank = 0; rank < world; ++rank) {
        const dist::MemoryReport share = dist::plan_memory(c.config, policy::Recipe{}, world, rank, 0);
        CHECK(share.optimizer_state <= (one.optimizer_state + world - 1) / world + 2 * 4 * c.band_elements);
        // Only the moments shard: everything else is whole on every rank.
        CHECK(share.master_weights == one.master_weights);
        CHECK(share.gradients == one.gradients);
        CHECK(share.compute_weights == one.compute_weights);
        CHECK(share.backward_weights == one.backward_weights);
        sum += share.optimizer_state;
      }
      CHECK(sum == one.optimizer_state);
    }
  }
}

TEST_CASE("memory plan: Llama-3.1-8B and 70B plan without allocating, with their published parameter counts") {
  // 8B: embeddings and head 2 * 128256 * 4096 = 1050673152; per layer q and o
  // 4096^2 each, k and v 1024 * 4096 each, MLP 3 * 14336 * 4096, norms
  // 2 * 4096: 218112000; 32 layers; final norm 4096.
  const int64_t params_8b = 1050673152 + 32 * int64_t{218112000} + 4096;
  REQUIRE(params_8b == 8030261248);
  // 70B: 2 * 128256 * 8192 = 2101346304; per layer 2 * 8192^2 + 2 * 1024 * 8192
  // + 3 * 28672 * 8192 + 2 * 8192 = 855654400; 80 layers; final norm 8192.
  const int64_t params_70b = 2101346304 + 80 * int64_t{855654400} + 8192;
  REQUIRE(params_70b == 70553706496);

  const auto start = std::chrono::steady_clock::now();
  const dist::MemoryReport plan_8b = dist::plan_memory(llama31_8b(), policy::Recipe{}, 1, 0, 0);
  const dist::MemoryReport plan_70b = dist::plan_memory(llama31_70b(), fp8_recipe(), 64, 63, 1 << 20);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 1.0);  // nothing is allocated: no model-sized work

  CHECK(model::parameter_count(llama31_8b()) == params_8b);
  CHECK(model::parameter_count(llama31_70b()) == params_70b);
  // Every dimension is a multiple of 128: the arena has no padding, so the
  // masters are exactly two FP32 copies (host and arena), 4 * 8.03e9 bytes each.
  CHECK(plan_8b.master_weights == 2 * 4 * params_8b);
  CHECK(plan_8b.gradients == 4 * params_8b);
  CHECK(plan_8b.optimizer_state == 2 * 4 * params_8b);
  // BF16 throughout but for the norms (32 * 2 * 4096 + 4096 values, FP32);
  // the backward pass holds the head's W^T and every projection's, not the embeddings.
  const int64_t norms_8b = 32 * 2 * 4096 + 4096, embeddings_8b = 128256 * 4096;
  CHECK(plan_8b.compute_weights == 2 * params_8b + 2 * norms_8b);
  CHECK(plan_8b.backward_weights == 2 * (params_8b - embeddings_8b - norms_8b));
  CHECK(plan_70b.master_weights == 2 * 4 * params_70b);
  CHECK(plan_70b.kv_cache == (int64_t{1} << 20) * 80 * 2 * 1024 * 2);  // BF16 K and V, kv_dim 1024
}

}  // namespace fp8rl::test
