// The trainer's parameter arena: its layout (aligned offsets, zero gaps,
// shard points that never split a 128x128 block), the masters it holds for
// its policy, two trainers of one policy handing the masters over, and a
// step's host<->backend traffic (token-sized, never parameter-sized).
#include <doctest/doctest.h>

#include <algorithm>

#include "core/context.h"
#include "core/train/param_arena.h"
#include "core/train/trainer.h"
#include "support/counting_backend.h"
#include "trainer/trainer_test_support.h"

namespace fp8rl::test {
namespace {

// Matrices of several 128-row bands with partial blocks (vocab 301,
// hidden 160, intermediate 200), and biases.
model::ModelConfig banded_config() { return tiny_qwen2(); }

train::TrainerOptions options() {
  train::TrainerOptions o;
  o.schedule.base_lr = 1e-3;
  o.advantages.group_size = 2;
  return o;
}

std::vector<float> whole(Backend& backend, const float* buffer, int64_t count) {
  std::vector<float> host(static_cast<size_t>(count));
  backend.download(host.data(), buffer, host.size() * sizeof(float));
  return host;
}

}  // namespace

TEST_CASE("arena layout: aligned offsets in for_each_tensor order, and shard points that keep blocks whole") {
  model::ModelParams params = tiny_params(banded_config());
  const train::ArenaLayout layout(params);
  int64_t end = 0, expected_tensors = 0;
  model::for_each_tensor(
      params, [&](const std::string&, const std::vector<int64_t>&, model::HostTensor&) { ++expected_tensors; });
  REQUIRE(static_cast<int64_t>(layout.tensors.size()) == expected_tensors);
  for (const train::ArenaTensor& t : layout.tensors) {
    CAPTURE(t.name);
    CHECK(t.offset % 128 == 0);
    CHECK(t.offset >= end);
    CHECK(t.decay == (t.shape.size() == 2));
    end = t.offset + t.size;
  }
  CHECK(layout.total >= end);
  CHECK(layout.total % 128 == 0);

  const std::vector<int64_t> points = layout.shard_points();
  REQUIRE(points.front() == 0);
  CHECK(std::is_sorted(points.begin(), points.end()));
  int64_t banded = 0;
  for (const train::ArenaTensor& t : layout.tensors) {
    if (t.shape.size() != 2) continue;
    const int64_t rows = t.shape[0], cols = t.shape[1];
    banded += rows > 128 ? 1 : 0;
    for (int64_t r0 = 0; r0 < rows; r0 += 128) {
      for (int64_t c0 = 0; c0 < cols; c0 += 128) {
        // The block's first and last elements; no shard may begin inside.
        const int64_t first = t.offset + r0 * cols + c0;
        const int64_t last = t.offset + (std::min(r0 + 128, rows) - 1) * cols + std::min(c0 + 128, cols) - 1;
        for (int64_t p : points) CHECK_FALSE((p > first && p <= last));
      }
      // Each band starts a shard point: a shard can begin at any band.
      CHECK(std::binary_search(points.begin(), points.end(), t.offset + r0 * cols));
    }
  }
  CHECK(banded >= 2);  // the embedding / head and the MLP matrices span several bands
}

TEST_CASE("the arena holds the policy's masters: zero gaps, the host copy downloaded when read") {
  const model::ModelConfig config = banded_config();
  Context context(cpu_request(2), Logger());
  policy::Policy policy(context, tiny_params(config));
  const model::ModelParams initial = policy.params();
  train::ParamArena arena(context.backend(), policy.host_tensors());
  std::vector<float> masters = whole(context.backend(), arena.masters(), arena.layout().total);
  size_t index = 0;
  model::for_each_tensor(const_cast<model::ModelParams&>(initial), [&](const std::string&, const std::vector<int64_t>&,
                                                                       model::HostTensor& t) {
    const train::ArenaTensor& slot = arena.layout().tensors[index++];
    CHECK(same_floats(std::vector<float>(masters.begin() + slot.offset, masters.begin() + slot.offset + slot.size),
                      t.data));
  });

  train::Trainer trainer(policy, options());
  const RolloutBatch batch = generate_batch(policy, paired_prompts(config, {4, 6}), seeds_from(3, 4), test_sampling(6));
  REQUIRE_FALSE(trainer.step(batch.view()).skipped);
  CHECK_FALSE(same_weights(policy.params(), initial));  // the host copy follows the arena
  const train::TrainingState state = trainer.state();
  CHECK(same_weights(state.params, policy.params()));
}

TEST_CASE("two trainers of one policy hand the master weights over") {
  const model::ModelConfig config = tiny_llama();
  Context context(cpu_request(2), Logger());
  policy::Policy policy(context, tiny_params(config));
  const RolloutBatch batch = generate_batch(policy, paired_prompts(config, {4, 6}), seeds_from(5, 4), test_sampling(6));
  train::Trainer a(policy, options());
  REQUIRE_FALSE(a.step(batch.view()).skipped);
  const model::ModelParams after_a = policy.params();
  model::ModelParams after_b;
  {
    train::Trainer b(policy, options());  // takes the masters, with a's update
    REQUIRE_FALSE(b.step(batch.view()).skipped);
    after_b = policy.params();
    CHECK_FALSE(same_weights(after_a, after_b));
  }
  CHECK(same_weights(policy.params(), after_b));   // b is gone; the policy kept its weights
  CHECK(same_weights(a.state().params, after_b));  // a takes them back, b's update included
  REQUIRE_FALSE(a.step(batch.view()).skipped);
  CHECK_FALSE(same_weights(policy.params(), after_b));
}

TEST_CASE("the trainer's arena: gaps stay zero in all four buffers through steps") {
  const model::ModelConfig config = banded_config();
  Context context(cpu_request(2), Logger());
  policy::Policy policy(context, tiny_params(config));
  train::Trainer trainer(policy, options());
  for (uint64_t seed : {7u, 17u}) {
    const RolloutBatch batch =
        generate_batch(policy, paired_prompts(config, {4, 6}), seeds_from(seed, 4), test_sampling(6));
    REQUIRE_FALSE(trainer.step(batch.view()).skipped);
  }
  train::ParamArena& arena = const_cast<train::ParamArena&>(trainer.arena());
  const int64_t total = arena.layout().total;
  int64_t gaps = 0;
  for (const float* buffer : {arena.masters(), arena.grads(), arena.exp_avg(), arena.exp_avg_sq()}) {
    const std::vector<float> values = whole(context.backend(), buffer, total);
    int64_t next = 0;
    auto check_gap = [&](int64_t end) {
      for (int64_t i = next; i < end; ++i, ++gaps) CHECK(values[static_cast<size_t>(i)] == 0.0f);
    };
    for (const train::ArenaTensor& t : arena.layout().tensors) {
      check_gap(t.offset);
      next = t.offset + t.size;
    }
    check_gap(total);
  }
  CHECK(gaps > 0);
  // Memory per buffer, as the trainer reports it.
  CHECK(trainer.memory().gradients == total * 4);
  CHECK(trainer.memory().optimizer_state == total * 8);
}

}  // namespace fp8rl::test

namespace fp8rl::test {

TEST_CASE("a training step moves no per-parameter data between host and backend") {
  const model::ModelConfig config = banded_config();
  for (const NamedRecipe& recipe : {all_recipes()[0], all_recipes()[4]}) {
    CAPTURE(recipe.name);
    auto owned = std::make_unique<CountingBackend>();
    CountingBackend& counted = *owned;
    Context context(std::move(owned), Logger(), 2);
    policy::Policy policy(context, tiny_params(config), recipe.recipe);
    train::Trainer trainer(policy, options());  // recalibrates after every step
    const RolloutBatch batch =
        generate_batch(policy, paired_prompts(config, {4, 6}), seeds_from(9, 4), test_sampling(6));
    REQUIRE_FALSE(trainer.step(batch.view()).skipped);  // warm-up: grow-only workspaces
    counted.reset_counts();
    const train::StepMetrics m = trainer.step(batch.view());
    REQUIRE_FALSE(m.skipped);
    const size_t parameter_bytes = static_cast<size_t>(model::parameter_count(config)) * sizeof(float);
    const TransferCounts counts = counted.counts();
    CAPTURE(counts.upload_bytes);
    CAPTURE(counts.download_bytes);
    CAPTURE(parameter_bytes);
    // Token-sized traffic only: ids, log-probs and their gradients, entropies,
    // per-token Q/K/V maxima and the norm; before the arena a step downloaded
    // every gradient and uploaded every master weight (2 x parameter_bytes).
    MESSAGE("one step: " << counts.uploads << " uploads (" << counts.upload_bytes << " B), " << counts.downloads
                         << " downloads (" << counts.download_bytes << " B); parameters " << parameter_bytes << " B");
    CHECK(counts.upload_bytes < parameter_bytes / 20);
    CHECK(counts.download_bytes < parameter_bytes / 20);
  }
}

}  // namespace fp8rl::test
