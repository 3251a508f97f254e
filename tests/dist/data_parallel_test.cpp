// The data-parallel trainer with ranks as threads: every rank holds bitwise
// the same compute weights and scales after every step, the generator's and
// trainer's log-probs stay bitwise equal on every rank, a fixed world size
// reproduces itself bit for bit, N ranks on a split batch match one rank on
// the whole batch up to summation order, the optimizer state is sharded and
// re-shards across world sizes, and a batch refused on one rank is refused on
// all.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "core/policy/fingerprint.h"
#include "dist/dist_test_support.h"

namespace fp8rl::test {
namespace {

struct RankRecord {
  std::vector<uint64_t> fingerprints;  // after each iteration
  std::vector<train::StepMetrics> metrics;
  std::vector<float> logp_gen;  // of the first iteration's rollouts
  model::ModelParams params;    // after the last iteration
  train::Trainer::Memory memory;
  // The last step's summed gradient over this rank's shard, placed in a
  // [total] array (zeros elsewhere): the ranks' arrays add up to the whole.
  std::vector<float> gradient;
};

// `iterations` RL iterations of `world` ranks from a policy of seed 11 on
// rank 0 (the other ranks start elsewhere: the trainer broadcasts rank 0's).
std::vector<RankRecord> train_ranks(int world, const policy::Recipe& recipe, int iterations,
                                    const train::TrainerOptions& options = dp_options(),
                                    const model::ModelConfig& config = tiny_qwen2()) {
  std::vector<RankRecord> records(static_cast<size_t>(world));
  run_ranks(world, [&](int rank, Context& context) {
    policy::Policy policy(context, tiny_params(config, 11 + static_cast<uint64_t>(rank)), recipe);
    train::Trainer trainer(policy, options);
    RankRecord& record = records[static_cast<size_t>(rank)];
    const FlatSequences prompts = rank_share(global_prompts(config), rank, world);
    for (int i = 0; i < iterations; ++i) {
      const std::vector<uint64_t> seeds = trainer.next_seeds(prompts.view().count);
      rollout::SamplingOptions sampling = test_sampling(6);
      sampling.record_experts = true;  // Mixture-of-Experts policies: routing_agreement
      const RolloutBatch batch = generate_batch(policy, prompts, seeds, sampling);
      if (i == 0) record.logp_gen = batch.logp_gen;
      record.metrics.push_back(trainer.iterate(batch.view()).total);
      record.fingerprints.push_back(policy::fingerprint(policy));
    }
    trainer.gather_masters();  // collective: the masters outside this rank's shard
    record.params = policy.params();
    record.memory = trainer.memory();
    const train::ParamArena& arena = trainer.arena();
    record.gradient.assign(static_cast<size_t>(arena.layout().total), 0.0f);
    if (arena.shard_size() > 0)
      context.backend().download(record.gradient.data() + arena.shard_begin(),
                                 const_cast<train::ParamArena&>(arena).grads() + arena.shard_begin(),
                                 static_cast<size_t>(arena.shard_size()) * sizeof(float));
  });
  return records;
}

double max_abs_difference(const model::ModelParams& a, const model::ModelParams& b) {
  double worst = 0.0;
  std::vector<const std::vector<float>*> left, right;
  model::for_each_tensor(const_cast<model::ModelParams&>(a),
                         [&](const std::string&, const std::vector<int64_t>&, model::HostTensor& t) { left.push_back(&t.data); });
  model::for_each_tensor(const_cast<model::ModelParams&>(b),
                         [&](const std::string&, const std::vector<int64_t>&, model::HostTensor& t) { right.push_back(&t.data); });
  for (size_t i = 0; i < left.size(); ++i)
    for (size_t j = 0; j < left[i]->size(); ++j)
      worst = std::max(worst, std::fabs(static_cast<double>((*left[i])[j]) - (*right[i])[j]));
  return worst;
}

}  // namespace

TEST_CASE("data parallel: every rank holds the same compute weights and scales, and generates what it trains on") {
  for (const NamedRecipe& recipe : {all_recipes()[0], all_recipes()[4]}) {
    for (int world : {2, 3}) {
      CAPTURE(std::string(recipe.name));
      CAPTURE(world);
      const std::vector<RankRecord> ranks = train_ranks(world, recipe.recipe, 3);
      for (const RankRecord& r : ranks) {
        CHECK(r.fingerprints == ranks[0].fingerprints);  // compute weights, block scales, Q/K/V scales
        for (size_t i = 0; i < r.metrics.size(); ++i) {
          CHECK_FALSE(r.metrics[i].skipped);
          CHECK(r.metrics[i].has_mismatch);
          CHECK(r.metrics[i].mismatch.token_mult_prob_error == 1.0);  // logp_old == logp_gen on every rank
          // Metrics are global: the same bits on every rank.
          CHECK(r.metrics[i].loss == ranks[0].metrics[i].loss);
          CHECK(r.metrics[i].grad_norm == ranks[0].metrics[i].grad_norm);
          CHECK(r.metrics[i].completion_tokens == ranks[0].metrics[i].completion_tokens);
          CHECK(r.metrics[i].sequences == 12);
          CHECK(r.metrics[i].communication.bytes_reduced > 0);
          CHECK(r.metrics[i].communication.bytes_gathered > 0);
        }
      }
      // The fingerprint changes with each step: the check above compares something.
      CHECK(ranks[0].fingerprints[0] != ranks[0].fingerprints[1]);
    }
  }
}

TEST_CASE("data parallel: a Mixture-of-Experts policy trains on N ranks as on one, routing as it generated") {
  const model::ModelConfig config = tiny_qwen3_moe();
  const policy::Recipe recipe = all_recipes()[4].recipe;  // FP8 linears, KV cache and attention
  const std::vector<RankRecord> one = train_ranks(1, recipe, 1, dp_options(), config);
  for (int world : {2, 3}) {
    CAPTURE(world);
    const std::vector<RankRecord> many = train_ranks(world, recipe, 2, dp_options(), config);
    for (const RankRecord& r : many) {
      CHECK(r.fingerprints == many[0].fingerprints);  // the experts' codes and scales too
      for (const train::StepMetrics& m : r.metrics) {
        CHECK(m.routing_agreement == 1.0);
        CHECK(m.routing_choices == one[0].metrics[0].routing_choices);  // global counts
        CHECK(m.mismatch.token_mult_prob_error == 1.0);
      }
    }
    CHECK(many[0].metrics[0].loss == doctest::Approx(one[0].metrics[0].loss).epsilon(1e-6));
    CHECK(many[0].metrics[0].grad_norm == doctest::Approx(one[0].metrics[0].grad_norm).epsilon(1e-5));
  }
}

TEST_CASE("data parallel: a fixed world size reproduces itself bit for bit") {
  const std::vector<RankRecord> first = train_ranks(2, all_recipes()[4].recipe, 2);
  const std::vector<RankRecord> second = train_ranks(2, all_recipes()[4].recipe, 2);
  CHECK(first[0].fingerprints == second[0].fingerprints);
  CHECK(same_weights(first[0].params, second[0].params));
  CHECK(same_weights(first[1].params, second[1].params));
}

TEST_CASE("data parallel: N ranks on a split batch equal one rank on the whole batch up to summation order") {
  for (const NamedRecipe& recipe : {all_recipes()[0], all_recipes()[4]}) {
    CAPTURE(std::string(recipe.name));
    const std::vector<RankRecord> one = train_ranks(1, recipe.recipe, 1);
    REQUIRE(max_abs_difference(one[0].params, tiny_params(tiny_qwen2(), 11)) > 0.0);
    for (int world : {2, 3}) {
      CAPTURE(world);
      const std::vector<RankRecord> many = train_ranks(world, recipe.recipe, 1);
      // One seed stream and rank 0's weights: the union of the ranks'
      // rollouts is the single process's rollout, bit for bit.
      std::vector<float> joined;
      for (const RankRecord& r : many) joined.insert(joined.end(), r.logp_gen.begin(), r.logp_gen.end());
      CHECK(same_floats(joined, one[0].logp_gen));
      // The summed gradient differs from one process's only in summation order.
      double gradient_difference = 0.0, gradient_max = 0.0;
      for (size_t i = 0; i < one[0].gradient.size(); ++i) {
        float joined_value = 0.0f;
        for (const RankRecord& r : many) joined_value += r.gradient[i];  // one rank owns each element
        gradient_difference = std::max(gradient_difference, std::fabs(static_cast<double>(joined_value) - one[0].gradient[i]));
        gradient_max = std::max(gradient_max, std::fabs(static_cast<double>(one[0].gradient[i])));
      }
      const double difference = max_abs_difference(many[0].params, one[0].params);
      const double loss_difference = std::fabs(many[0].metrics[0].loss - one[0].metrics[0].loss);
      MESSAGE(std::string(recipe.name) << ", " << world << " ranks: max |g_N - g_1| / max |g_1| = " << gradient_difference / gradient_max
                          << ", max |w_N - w_1| = " << difference << " (learning rate 1e-3), |loss_N - loss_1| = "
                          << loss_difference);
      CHECK(gradient_difference <= 1e-5 * gradient_max);
      // AdamW's first step is lr * g / (|g| + eps): for |g| near eps it
      // magnifies a gradient's rounding difference, bounded by a percent of lr.
      CHECK(difference <= 1e-2 * 1e-3);
      CHECK(loss_difference <= 1e-6 * std::max(1.0, std::fabs(one[0].metrics[0].loss)));
      CHECK(many[0].metrics[0].completion_tokens == one[0].metrics[0].completion_tokens);
      CHECK(many[0].metrics[0].mismatch.token_mult_prob_error == 1.0);
    }
  }
}

TEST_CASE("data parallel: each rank holds a 1/N shard of the optimizer state and the state re-shards across world sizes") {
  const model::ModelConfig config = tiny_qwen2();
  const std::vector<RankRecord> one = train_ranks(1, {}, 1);
  for (int world : {2, 3}) {
    const std::vector<RankRecord> many = train_ranks(world, {}, 1);
    int64_t total = 0;
    for (const RankRecord& r : many) {
      total += r.memory.optimizer_state;
      CHECK(r.memory.optimizer_state < one[0].memory.optimizer_state * 2 / world);  // near 1/N (whole 128-row bands)
      CHECK(r.memory.gradients == one[0].memory.gradients);
    }
    CHECK(total == one[0].memory.optimizer_state);
  }

  // A 2-rank state, gathered, resumes on 3 ranks and on 1: each takes its shard.
  const std::string path = "data_parallel_state.safetensors";
  train::TrainingState saved;
  run_ranks(2, [&](int rank, Context& context) {
    policy::Policy policy(context, tiny_params(config, 11));
    train::Trainer trainer(policy, dp_options());
    const FlatSequences prompts = rank_share(global_prompts(config), rank, 2);
    const RolloutBatch batch = generate_batch(policy, prompts, trainer.next_seeds(prompts.view().count), test_sampling(6));
    trainer.iterate(batch.view());
    train::TrainingState state = trainer.state();  // collective
    if (rank == 0) {
      train::save_training_state(path, state);
      saved = std::move(state);
    }
  });
  REQUIRE(saved.exp_avg.size() > 0);
  for (int world : {3, 1}) {
    CAPTURE(world);
    std::mutex mutex;
    std::vector<train::TrainingState> reloaded(static_cast<size_t>(world));
    run_ranks(world, [&](int rank, Context& context) {
      policy::Policy policy(context, tiny_params(config, 99));
      train::Trainer trainer(policy, dp_options());
      trainer.restore(train::load_training_state(path));
      train::TrainingState state = trainer.state();
      const std::lock_guard<std::mutex> lock(mutex);
      reloaded[static_cast<size_t>(rank)] = std::move(state);
    });
    for (const train::TrainingState& state : reloaded) {
      CHECK(same_weights(state.params, saved.params));
      REQUIRE(state.exp_avg.size() == saved.exp_avg.size());
      for (size_t i = 0; i < saved.exp_avg.size(); ++i) {
        CHECK(same_floats(state.exp_avg[i], saved.exp_avg[i]));
        CHECK(same_floats(state.exp_avg_sq[i], saved.exp_avg_sq[i]));
      }
      CHECK(state.rng_counter == saved.rng_counter);
    }
  }
  std::remove(path.c_str());
}

TEST_CASE("data parallel: a batch refused on one rank is refused on every rank, naming it") {
  const model::ModelConfig config = tiny_qwen2();
  std::vector<std::string> messages(2);
  run_ranks(2, [&](int rank, Context& context) {
    policy::Policy policy(context, tiny_params(config, 11));
    train::Trainer trainer(policy, dp_options());
    const FlatSequences prompts = rank_share(global_prompts(config), rank, 2);
    RolloutBatch batch = generate_batch(policy, prompts, trainer.next_seeds(prompts.view().count), test_sampling(6));
    if (rank == 1) batch.prompt_lengths[0] = 0;  // out of [1, length]
    try {
      trainer.iterate(batch.view());
    } catch (const Error& error) {
      messages[static_cast<size_t>(rank)] = error.what();
    }
  });
  for (const std::string& message : messages) {
    CAPTURE(message);
    CHECK(message.find("rank 1") != std::string::npos);
    CHECK(message.find("prompt length 0") != std::string::npos);
  }
}

TEST_CASE("data parallel: ranks start from rank 0's weights and differing recipes are refused on every rank") {
  const model::ModelConfig config = tiny_qwen2();
  std::vector<uint64_t> prints(3);
  run_ranks(3, [&](int rank, Context& context) {
    policy::Policy policy(context, tiny_params(config, 11 + static_cast<uint64_t>(rank)), all_recipes()[4].recipe);
    train::Trainer trainer(policy, dp_options());
    prints[static_cast<size_t>(rank)] = policy::fingerprint(policy);
  });
  CHECK(prints[1] == prints[0]);
  CHECK(prints[2] == prints[0]);

  std::vector<std::string> messages(2);
  run_ranks(2, [&](int rank, Context& context) {
    policy::Policy policy(context, tiny_params(config, 11), all_recipes()[rank == 0 ? 0 : 1].recipe);
    try {
      train::Trainer trainer(policy, dp_options());
    } catch (const Error& error) {
      messages[static_cast<size_t>(rank)] = error.what();
    }
  });
  for (const std::string& message : messages) {
    CAPTURE(message);
    CHECK(message.find("rank 1 trains in recipe") != std::string::npos);
  }
}

TEST_CASE("data parallel: the seed stream is global, so the world size does not change which seeds are drawn") {
  const model::ModelConfig config = tiny_qwen2();
  std::vector<uint64_t> single;
  run_ranks(1, [&](int, Context& context) {
    policy::Policy policy(context, tiny_params(config));
    train::Trainer trainer(policy, dp_options());
    single = trainer.next_seeds(7);
    const std::vector<uint64_t> more = trainer.next_seeds(5);
    single.insert(single.end(), more.begin(), more.end());
  });
  std::vector<std::vector<uint64_t>> per_rank(3);
  run_ranks(3, [&](int rank, Context& context) {
    policy::Policy policy(context, tiny_params(config));
    train::Trainer trainer(policy, dp_options());
    const int64_t first[] = {2, 3, 2}, second[] = {1, 0, 4};
    per_rank[static_cast<size_t>(rank)] = trainer.next_seeds(first[rank]);
    const std::vector<uint64_t> more = trainer.next_seeds(second[rank]);
    per_rank[static_cast<size_t>(rank)].insert(per_rank[static_cast<size_t>(rank)].end(), more.begin(), more.end());
  });
  const std::vector<uint64_t> expected = {single[0], single[1], single[2], single[3], single[4], single[5], single[6],
                                          single[7], single[8], single[9], single[10], single[11]};
  const std::vector<uint64_t> joined = {per_rank[0][0], per_rank[0][1], per_rank[1][0], per_rank[1][1],
                                        per_rank[1][2], per_rank[2][0], per_rank[2][1], per_rank[0][2],
                                        per_rank[2][2], per_rank[2][3], per_rank[2][4], per_rank[2][5]};
  CHECK(joined == expected);
}

}  // namespace fp8rl::test
