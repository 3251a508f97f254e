// Data-parallel checkpoints: each rank writes its optimizer shard, rank 0 the
// weights and then the manifest; a set resumes bit for bit on the world size
// that wrote it and re-shards onto others; only what a manifest names is
// ever read, so a save that never reached its manifest leaves the previous
// checkpoint loadable, and a failure on one rank fails the save on all.
#include <doctest/doctest.h>

#include <filesystem>
#include <mutex>
#include <set>

#include "core/policy/fingerprint.h"
#include "core/train/checkpoint_set.h"
#include "dist/dist_test_support.h"

namespace fp8rl::test {
namespace {

namespace fs = std::filesystem;

class Folder {
 public:
  Folder() : path_(fs::temp_directory_path() / ("fp8rl_checkpoint_set_" + train::new_set_id())) {
    fs::create_directories(path_);
  }
  ~Folder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::set<std::string> names() const {
    std::set<std::string> out;
    for (const auto& entry : fs::directory_iterator(path_)) out.insert(entry.path().filename().string());
    return out;
  }

 private:
  fs::path path_;
};

// One RL iteration of `rank` on its share of the global prompts.
void iterate(train::Trainer& trainer, policy::Policy& policy, int rank, int world) {
  const FlatSequences prompts = rank_share(global_prompts(tiny_qwen2()), rank, world);
  const RolloutBatch batch = generate_batch(policy, prompts, trainer.next_seeds(prompts.view().count), test_sampling(6));
  trainer.iterate(batch.view());
}

policy::Recipe fp8() { return all_recipes()[4].recipe; }

// Every rank's gathered state after loading `path` on `world` ranks.
std::vector<train::TrainingState> load_on(int world, const std::string& path) {
  std::vector<train::TrainingState> states(static_cast<size_t>(world));
  std::mutex mutex;
  run_ranks(world, [&](int rank, Context& context) {
    policy::Policy policy(context, tiny_params(tiny_qwen2(), 99), fp8());
    train::Trainer trainer(policy, dp_options());
    trainer.load(path);
    train::TrainingState state = trainer.state();
    const std::lock_guard<std::mutex> lock(mutex);
    states[static_cast<size_t>(rank)] = std::move(state);
  });
  return states;
}

void check_same_state(const train::TrainingState& a, const train::TrainingState& b) {
  CHECK(same_weights(a.params, b.params));
  REQUIRE(a.exp_avg.size() == b.exp_avg.size());
  for (size_t i = 0; i < a.exp_avg.size(); ++i) {
    CHECK(same_floats(a.exp_avg[i], b.exp_avg[i]));
    CHECK(same_floats(a.exp_avg_sq[i], b.exp_avg_sq[i]));
  }
  CHECK(a.steps == b.steps);
  CHECK(a.optimizer_steps == b.optimizer_steps);
  CHECK(a.rng_counter == b.rng_counter);
  CHECK(same_floats(a.scales.k, b.scales.k));
}

}  // namespace

TEST_CASE("checkpoint set: 2 ranks resume bit for bit and the set re-shards onto 1 and 3 ranks") {
  const Folder folder;
  const std::string path = folder.file("state.safetensors");
  train::TrainingState saved;
  std::vector<uint64_t> continued(2);
  run_ranks(2, [&](int rank, Context& context) {
    policy::Policy policy(context, tiny_params(tiny_qwen2(), 11), fp8());
    train::Trainer trainer(policy, dp_options());
    iterate(trainer, policy, rank, 2);
    trainer.save(path);
    train::TrainingState state = trainer.state();
    iterate(trainer, policy, rank, 2);
    continued[static_cast<size_t>(rank)] = policy::fingerprint(policy);
    if (rank == 0) saved = std::move(state);
  });
  REQUIRE(saved.optimizer_steps == 1);
  const std::set<std::string> files = folder.names();
  CHECK(files.size() == 4);  // the manifest, the weights and two shards
  const train::CheckpointManifest manifest = train::read_manifest(path);
  CHECK(files.count(manifest.weights) == 1);
  REQUIRE(manifest.shards.size() == 2);
  CHECK(manifest.shards[0].begin == 0);
  CHECK(manifest.shards[0].end > 0);  // both ranks hold a part
  CHECK(manifest.shards[1].end == manifest.arena_elements);

  std::vector<uint64_t> resumed(2);
  run_ranks(2, [&](int rank, Context& context) {
    policy::Policy policy(context, tiny_params(tiny_qwen2(), 99), fp8());
    train::Trainer trainer(policy, dp_options());
    trainer.load(path);
    iterate(trainer, policy, rank, 2);
    resumed[static_cast<size_t>(rank)] = policy::fingerprint(policy);
  });
  CHECK(resumed == continued);

  for (int world : {1, 3}) {
    CAPTURE(world);
    for (const train::TrainingState& state : load_on(world, path)) check_same_state(state, saved);
  }
}

TEST_CASE("checkpoint set: a one-rank file re-shards onto 3 ranks") {
  const Folder folder;
  const std::string path = folder.file("single.safetensors");
  train::TrainingState saved;
  run_ranks(1, [&](int rank, Context& context) {
    policy::Policy policy(context, tiny_params(tiny_qwen2(), 11), fp8());
    train::Trainer trainer(policy, dp_options());
    iterate(trainer, policy, rank, 1);
    trainer.save(path);
    saved = trainer.state();
  });
  CHECK(!train::is_checkpoint_set(path));  // one rank writes the single-file format
  for (const train::TrainingState& state : load_on(3, path)) check_same_state(state, saved);
}

TEST_CASE("checkpoint set: a save that never reached its manifest leaves the previous set loadable") {
  const Folder folder;
  const std::string path = folder.file("state.safetensors");
  const Folder backup;
  train::TrainingState first;
  run_ranks(2, [&](int rank, Context& context) {
    policy::Policy policy(context, tiny_params(tiny_qwen2(), 11), fp8());
    train::Trainer trainer(policy, dp_options());
    iterate(trainer, policy, rank, 2);
    trainer.save(path);
    train::TrainingState state = trainer.state();
    if (rank == 0) {
      first = std::move(state);
      for (const std::string& name : folder.names()) fs::copy_file(folder.file(name), backup.file(name));
    }
  });
  // The next save's shard and weights files, but the first set's manifest and
  // files: the folder a save killed before its manifest leaves.
  run_ranks(2, [&](int rank, Context& context) {
    policy::Policy policy(context, tiny_params(tiny_qwen2(), 11), fp8());
    train::Trainer trainer(policy, dp_options());
    trainer.load(path);
    iterate(trainer, policy, rank, 2);
    trainer.save(path);
  });
  const std::string second_set = train::read_manifest(path).set;
  for (const std::string& name : backup.names())
    fs::copy_file(backup.file(name), folder.file(name), fs::copy_options::overwrite_existing);
  CHECK(folder.names().size() == 7);  // the first set whole, the second's three files orphaned
  for (const train::TrainingState& state : load_on(2, path)) check_same_state(state, first);

  // The next complete save removes every file no manifest names.
  run_ranks(2, [&](int, Context& context) {
    policy::Policy policy(context, tiny_params(tiny_qwen2(), 11), fp8());
    train::Trainer trainer(policy, dp_options());
    trainer.load(path);
    trainer.save(path);
  });
  CHECK(folder.names().size() == 4);
  for (const std::string& name : folder.names()) CHECK(name.find(second_set) == std::string::npos);
}

TEST_CASE("checkpoint set: a write failing on one rank fails the save on every rank, naming it") {
  const Folder folder;
  const std::string path = folder.file("state.safetensors");
  std::vector<std::string> messages(2);
  train::TrainingState first;
  run_ranks(2, [&](int rank, Context& context) {
    policy::Policy policy(context, tiny_params(tiny_qwen2(), 11), fp8());
    train::Trainer trainer(policy, dp_options());
    iterate(trainer, policy, rank, 2);
    trainer.save(path);
    train::TrainingState state = trainer.state();
    if (rank == 0) first = std::move(state);
    iterate(trainer, policy, rank, 2);
    try {  // rank 1's folder does not exist
      trainer.save(rank == 0 ? path : folder.file("missing/state.safetensors"));
    } catch (const Error& error) {
      messages[static_cast<size_t>(rank)] = error.what();
    }
  });
  for (const std::string& message : messages) {
    CAPTURE(message);
    CHECK(message.find("rank 1: ") == 0);
    CHECK(message.find("missing") != std::string::npos);
  }
  for (const train::TrainingState& state : load_on(2, path)) check_same_state(state, first);
}

}  // namespace fp8rl::test
