// After a data-parallel step each rank requantizes the compute copies of the
// rows its optimizer shard covers and the ranks all-gather them (FP8 codes and
// block scales, BF16, FP32): the copies must equal, bit for bit, what one
// refit of the whole gathered masters computes, while moving about a quarter
// of the bytes of an FP32 master gather; the masters outside a rank's shard
// are stale until gathered, and reading them before says so.
#include <doctest/doctest.h>

#include <string>

#include "core/policy/fingerprint.h"
#include "dist/dist_test_support.h"

namespace fp8rl::test {
namespace {

// Whether a shard boundary falls strictly inside a matrix (so that the
// gather splits it into 128-row bands owned by different ranks).
bool splits_a_matrix(const train::ParamArena& arena) {
  int64_t bound = 0;
  for (const int64_t count : arena.shard_counts()) {
    bound += count;
    for (const train::ArenaTensor& t : arena.layout().tensors)
      if (t.shape.size() == 2 && t.offset < bound && bound < t.offset + t.size) return true;
  }
  return false;
}

struct GatherRecord {
  uint64_t gathered_fingerprint = 0, refitted_fingerprint = 0;
  int64_t bytes_gathered = 0;
  int64_t fp32_master_bytes = 0;  // what an FP32 all-gather of the masters would receive
  bool split = false;
};

std::vector<GatherRecord> step_and_refit(int world, const policy::Recipe& recipe) {
  const model::ModelConfig config = tiny_qwen2();
  std::vector<GatherRecord> records(static_cast<size_t>(world));
  run_ranks(world, [&](int rank, Context& context) {
    policy::Policy policy(context, tiny_params(config, 11), recipe);
    train::TrainerOptions options = dp_options();
    options.recalibrate_after_step = true;
    train::Trainer trainer(policy, options);
    const FlatSequences prompts = rank_share(global_prompts(config), rank, world);
    const RolloutBatch batch = generate_batch(policy, prompts, trainer.next_seeds(prompts.view().count), test_sampling(6));
    const train::StepMetrics metrics = trainer.iterate(batch.view()).total;
    GatherRecord& record = records[static_cast<size_t>(rank)];
    record.gathered_fingerprint = policy::fingerprint(policy);
    record.bytes_gathered = metrics.communication.bytes_gathered;
    const train::ParamArena& arena = trainer.arena();
    record.fp32_master_bytes = (arena.layout().total - arena.shard_size()) * static_cast<int64_t>(sizeof(float));
    record.split = splits_a_matrix(arena);
    trainer.gather_masters();
    policy.refit();  // one rank quantizing every block from the whole masters
    record.refitted_fingerprint = policy::fingerprint(policy);
  });
  return records;
}

}  // namespace

TEST_CASE("data parallel: the gathered compute copies equal a whole refit, for a quarter of the FP32 bytes") {
  for (const NamedRecipe& recipe : {all_recipes()[0], all_recipes()[1], all_recipes()[5], all_recipes()[6]}) {
    bool some_matrix_split = false;
    for (int world : {2, 3, 4, 5}) {
      CAPTURE(std::string(recipe.name));
      CAPTURE(world);
      const std::vector<GatherRecord> ranks = step_and_refit(world, recipe.recipe);
      for (const GatherRecord& r : ranks) {
        CHECK(r.gathered_fingerprint == ranks[0].gathered_fingerprint);
        CHECK(r.refitted_fingerprint == r.gathered_fingerprint);
        some_matrix_split = some_matrix_split || r.split;
      }
      const GatherRecord& last = ranks.back();
      const double ratio = static_cast<double>(last.bytes_gathered) / static_cast<double>(last.fp32_master_bytes);
      MESSAGE(std::string(recipe.name) << ", " << world << " ranks: rank " << world - 1 << " received " << last.bytes_gathered
                          << " bytes in gathers, " << ratio << " of an FP32 master gather");
      // Every weight as BF16 at most (half), plus the small FP32 norms,
      // biases and metrics; FP8 linear layers bring it toward a quarter.
      CHECK(ratio < (recipe.recipe.linear == policy::Precision::fp8 ? 0.45 : 0.6));
    }
    CHECK(some_matrix_split);  // the band-wise requantization was exercised
  }
}

TEST_CASE("data parallel: the masters outside a rank's shard are stale until gathered, and reading them says so") {
  const model::ModelConfig config = tiny_qwen2();
  run_ranks(2, [&](int rank, Context& context) {
    policy::Policy policy(context, tiny_params(config, 11), all_recipes()[1].recipe);
    uint64_t trained = 0;
    {
      train::Trainer trainer(policy, dp_options());
      const FlatSequences prompts = rank_share(global_prompts(config), rank, 2);
      const RolloutBatch batch =
          generate_batch(policy, prompts, trainer.next_seeds(prompts.view().count), test_sampling(6));
      trainer.iterate(batch.view());
      try {
        (void)policy.params();
        FAIL("the partial masters were read");
      } catch (const Error& error) {
        CHECK(error.status() == Status::distributed);
        CHECK(std::string(error.what()).find("fp8rl_trainer_gather_weights") != std::string::npos);
      }
      trained = policy::fingerprint(policy);
    }  // destroyed before a gather: the policy keeps its compute copies only
    CHECK(policy::fingerprint(policy) == trained);
    CHECK_THROWS_AS((void)policy.params(), Error);
    policy.copy_weights_from(policy::Policy(context, tiny_params(config, 5)));  // whole again
    CHECK(policy.params().config.hidden_size == config.hidden_size);
  });
}

}  // namespace fp8rl::test
