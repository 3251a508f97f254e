// The trainer's state and checkpoints: the whole state as one value (for one
// process, or gathered from every rank), and the files a save writes: one
// training-state file with one rank, a checkpoint set with N
// (core/train/checkpoint_set.h).
#include "core/train/checkpoint_set.h"
#include "core/train/trainer_engine.h"
#include "core/train/training_state.h"

namespace fp8rl::train {

void Trainer::gather_masters() {
  attach();
  ParamArena& arena = engine_->arena;
  if (arena.complete()) return;  // as on every rank: all ranks take the same steps
  engine_->collectives.all_gather(arena.masters(), arena.shard_counts(), dist::ElementType::f32);
  arena.set_masters_partial(false);
}

TrainingState Trainer::state() {
  TrainingState s = weights_and_counters();
  ParamArena& arena = engine_->arena;
  if (optimizer_steps_ > 0) {
    // Every rank's shard, gathered: the state is whole on every rank.
    for (auto [shard, out] : {std::pair{arena.exp_avg(), &s.exp_avg}, std::pair{arena.exp_avg_sq(), &s.exp_avg_sq}}) {
      std::vector<float> full;
      arena.download_shard(shard, full);
      engine_->collectives.all_gather_host(full.data(), arena.shard_counts(), dist::ElementType::f32);
      *out = arena.split(full);
    }
  }
  return s;
}

void Trainer::restore(const TrainingState& s) {
  attach();
  ParamArena& arena = engine_->arena;
  const std::vector<ArenaTensor>& tensors = arena.layout().tensors;
  const bool has_moments = !s.exp_avg.empty() || !s.exp_avg_sq.empty();
  if (has_moments) {
    require(s.exp_avg.size() == tensors.size() && s.exp_avg_sq.size() == tensors.size(),
            "training state: optimizer moments for " + std::to_string(s.exp_avg.size()) + " tensors; the model has " +
                std::to_string(tensors.size()));
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto size = static_cast<size_t>(tensors[i].size);
      require(s.exp_avg[i].size() == size && s.exp_avg_sq[i].size() == size,
              "training state: optimizer moments of tensor " + tensors[i].name + " have the wrong size");
    }
  }
  require(s.optimizer_steps >= 0 && s.steps >= s.optimizer_steps,
          "training state: step counters " + std::to_string(s.steps) + " and " + std::to_string(s.optimizer_steps) +
              " are inconsistent");
  policy_.replace_state(s.params, s.recipe, s.scales);  // validates, then replaces (the arena's masters too)
  arena.zero_moments();
  if (has_moments) {  // whole in the state: each rank takes its shard, whatever world size saved it
    arena.upload_shard(arena.exp_avg(), arena.join(s.exp_avg));
    arena.upload_shard(arena.exp_avg_sq(), arena.join(s.exp_avg_sq));
  }
  optimizer_steps_ = s.optimizer_steps;
  steps_ = s.steps;
  options_.seed = s.rng_seed;
  rng_counter_ = s.rng_counter;
  engine_->statistics.clear();
  rebuild_transposed();
}

TrainingState Trainer::weights_and_counters() {
  gather_masters();
  TrainingState s;
  s.params = policy_.params();
  s.recipe = policy_.recipe();
  s.scales = policy_.attention_scales();
  s.optimizer_steps = optimizer_steps_;
  s.steps = steps_;
  s.rng_seed = options_.seed;
  s.rng_counter = rng_counter_;
  return s;
}

// Each rank writes its shard and rank 0 the weights; the manifest follows
// only when every file of the set is complete on every rank.
void Trainer::save(const std::string& path) {
  dist::Collectives& c = engine_->collectives;
  if (!c.distributed()) return save_training_state(path, state());
  const TrainingState weights = weights_and_counters();
  ParamArena& arena = engine_->arena;
  std::string set = c.rank() == 0 ? new_set_id() : std::string(kSetIdLength, ' ');
  c.broadcast_host(set.data(), static_cast<int64_t>(set.size()), dist::ElementType::u8, 0);
  std::vector<float> exp_avg(static_cast<size_t>(arena.shard_size())), exp_avg_sq(exp_avg.size());
  const std::string folder = set_folder(path) + "/";
  c.on_every_rank([&] {
    for (auto [shard, out] : {std::pair{arena.exp_avg(), &exp_avg}, std::pair{arena.exp_avg_sq(), &exp_avg_sq}})
      if (!out->empty()) policy_.context().backend().download(out->data(), shard, out->size() * sizeof(float));
    write_moment_shard(folder + shard_file_name(path, set, c.rank()), set, arena.shard_begin(), exp_avg, exp_avg_sq);
    if (c.rank() == 0) save_training_state(folder + weights_file_name(path, set), weights);
  });
  c.on_every_rank([&] {
    if (c.rank() != 0) return;
    CheckpointManifest manifest{set, arena.layout().total, weights_file_name(path, set), {}};
    const std::vector<int64_t> bounds = dist::part_offsets(arena.shard_counts());
    for (int r = 0; r < c.size(); ++r)
      manifest.shards.push_back({shard_file_name(path, set, r), bounds[static_cast<size_t>(r)],
                                 bounds[static_cast<size_t>(r) + 1]});
    commit_manifest(path, manifest);
  });
}

// Whatever world size wrote the checkpoint: this rank reads the weights and
// the shard files that overlap its own shard.
void Trainer::load(const std::string& path) {
  if (!is_checkpoint_set(path)) return restore(load_training_state(path));
  const CheckpointManifest manifest = read_manifest(path);
  TrainingState s = load_training_state(set_folder(path) + "/" + manifest.weights);
  ParamArena& arena = engine_->arena;
  if (manifest.arena_elements != arena.layout().total)
    fail(Status::corrupt_data, path + ": the checkpoint's parameter arena has " +
                                   std::to_string(manifest.arena_elements) + " elements, this model's " +
                                   std::to_string(arena.layout().total));
  if (s.optimizer_steps > 0) {
    std::vector<float> exp_avg, exp_avg_sq;
    read_moment_range(path, manifest, arena.shard_begin(), arena.shard_end(), exp_avg, exp_avg_sq);
    for (auto [shard, out] : {std::pair{&exp_avg, &s.exp_avg}, std::pair{&exp_avg_sq, &s.exp_avg_sq}}) {
      std::vector<float> full(static_cast<size_t>(arena.layout().total), 0.0f);  // this rank's elements only
      std::copy(shard->begin(), shard->end(), full.begin() + arena.shard_begin());
      *out = arena.split(full);
    }
  }
  restore(s);
}

}  // namespace fp8rl::train
