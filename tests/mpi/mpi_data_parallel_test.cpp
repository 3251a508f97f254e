// Data-parallel GRPO across MPI processes through the public headers only
// (fp8rl.h, fp8rl_mpi.h): each rank has a context over its MPI communicator,
// a policy and a trainer, and generates and trains on its own whole groups
// of one global batch. After every step all ranks hold bitwise the same
// compute weights (fp8rl_policy_fingerprint), generate what they train on
// (token_mult_prob_error 1) and report the same global metrics; and N ranks
// on the batch split N ways end where one process on the whole batch ends,
// up to the order of the gradient sums. The thread suite (tests/dist) checks
// the same trainer with ranks as threads; this one checks it over MPI.
#include <doctest/doctest.h>
#include <fp8rl/fp8rl_mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "capi/capi_policy_fixture.h"
#include "mpi/mpi_test_support.h"

namespace {

using namespace capi_test;
using mpi_test::world_rank;
using mpi_test::world_size;

// The global batch: one GRPO group of two equal prompts per length.
const int64_t prompt_lengths[] = {3, 5, 4, 6, 2, 7};
constexpr int64_t groups = 6;
constexpr int64_t group_size = 2;

struct NamedRecipe {
  const char* name;
  fp8rl_recipe recipe;
};

std::vector<NamedRecipe> recipes() { return {{"bf16", default_recipe()}, {"fp8-kv-attention", fp8_everything_recipe()}}; }

// A context of one CPU thread (the ranks share the machine's cores), over
// the world's MPI communicator when distributed; destroyed at scope exit.
class Context {
 public:
  explicit Context(bool distributed) {
    fp8rl_communicator* communicator = nullptr;
    if (distributed)
      REQUIRE_MESSAGE(fp8rl_mpi_communicator_create(MPI_Comm_c2f(MPI_COMM_WORLD), &communicator) == FP8RL_OK,
                      std::string(fp8rl_last_error_message()));
    fp8rl_context_options options;
    REQUIRE(fp8rl_context_options_init(&options) == FP8RL_OK);
    options.backend = FP8RL_BACKEND_CPU;
    options.num_threads = 1;
    options.communicator = communicator;
    REQUIRE_MESSAGE(fp8rl_context_create(&options, &context_) == FP8RL_OK, std::string(fp8rl_last_error_message()));
    REQUIRE(fp8rl_communicator_destroy(communicator) == FP8RL_OK);  // the context keeps its reference
  }
  ~Context() { fp8rl_context_destroy(context_); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  fp8rl_context* get() const { return context_; }

 private:
  fp8rl_context* context_ = nullptr;
};

class Trainer {
 public:
  explicit Trainer(fp8rl_policy* policy) {
    fp8rl_trainer_options options;
    REQUIRE(fp8rl_trainer_options_init(&options) == FP8RL_OK);
    options.learning_rate = 1e-3;
    options.group_size = group_size;
    options.importance.mode = FP8RL_IMPORTANCE_TRUNCATED;
    options.micro_batch_tokens = 24;  // several micro-batches per rank
    REQUIRE_MESSAGE(fp8rl_trainer_create(policy, &options, &trainer_) == FP8RL_OK,
                    std::string(fp8rl_last_error_message()));
  }
  ~Trainer() { fp8rl_trainer_destroy(trainer_); }
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;
  fp8rl_trainer* get() const { return trainer_; }

 private:
  fp8rl_trainer* trainer_ = nullptr;
};

// Rank `rank` of `world`'s prompts: groups [rank * G / world, (rank + 1) * G / world).
Prompts share(int rank, int world, fp8rl_trainer* trainer) {
  Prompts prompts;
  for (int64_t g = groups * rank / world; g < groups * (rank + 1) / world; ++g)
    for (int64_t copy = 0; copy < group_size; ++copy)
      prompts.add(make_prompt(prompt_lengths[g], static_cast<uint32_t>(g)), 0);
  // One seed stream over all ranks (collective): rank r's after those of ranks 0..r-1.
  REQUIRE(fp8rl_trainer_next_seeds(trainer, prompts.count(), prompts.seeds.data()) == FP8RL_OK);
  return prompts;
}

// Sequences, log-probs and rewards of one rollout, laid out as fp8rl_train_batch takes them.
struct Step {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  std::vector<int64_t> prompt_lengths;
  std::vector<float> logp_gen;
  std::vector<float> rewards;
  double reward_sum = 0.0;

  fp8rl_train_batch batch() const {
    fp8rl_train_batch b;
    REQUIRE(fp8rl_train_batch_init(&b) == FP8RL_OK);
    b.tokens = tokens.data();
    b.offsets = offsets.data();
    b.num_sequences = static_cast<int64_t>(prompt_lengths.size());
    b.prompt_lengths = prompt_lengths.data();
    b.num_completion_tokens = static_cast<int64_t>(logp_gen.size());
    b.logp_gen = logp_gen.data();
    b.rewards = rewards.data();
    return b;
  }
};

// Generates the prompts' completions; reward: the fraction of completion tokens below vocab / 2.
Step rollout(fp8rl_policy* policy, const Prompts& prompts) {
  fp8rl_sampling_options options = sampling(1.0f, 6);
  options.stop_at_eos = 0;
  const std::vector<Completion> completions = generate(policy, prompts, options);
  const int64_t low_vocab = llama_config().vocab_size / 2;
  Step step;
  for (size_t i = 0; i < completions.size(); ++i) {
    const auto begin = prompts.tokens.begin() + prompts.offsets[i];
    const auto end = prompts.tokens.begin() + prompts.offsets[i + 1];
    step.tokens.insert(step.tokens.end(), begin, end);
    step.prompt_lengths.push_back(end - begin);
    step.tokens.insert(step.tokens.end(), completions[i].tokens.begin(), completions[i].tokens.end());
    step.offsets.push_back(static_cast<int64_t>(step.tokens.size()));
    step.logp_gen.insert(step.logp_gen.end(), completions[i].logprobs.begin(), completions[i].logprobs.end());
    const auto low = std::count_if(completions[i].tokens.begin(), completions[i].tokens.end(),
                                   [&](int32_t token) { return token < low_vocab; });
    step.rewards.push_back(static_cast<float>(low) / static_cast<float>(completions[i].tokens.size()));
    step.reward_sum += step.rewards.back();
  }
  return step;
}

fp8rl_train_metrics iterate(fp8rl_trainer* trainer, const Step& step) {
  fp8rl_train_metrics metrics;
  REQUIRE(fp8rl_train_metrics_init(&metrics) == FP8RL_OK);
  const fp8rl_train_batch batch = step.batch();
  REQUIRE_MESSAGE(fp8rl_trainer_iterate(trainer, &batch, &metrics, nullptr, 0) == FP8RL_OK,
                  std::string(fp8rl_last_error_message()));
  return metrics;
}

uint64_t fingerprint(fp8rl_policy* policy) {
  uint64_t print = 0;
  REQUIRE(fp8rl_policy_fingerprint(policy, &print) == FP8RL_OK);
  return print;
}

// The metrics that are global (the same bits on every rank): all but the
// timings and this rank's communication volume.
std::vector<double> global_metrics(const fp8rl_train_metrics& m) {
  return {static_cast<double>(m.step), static_cast<double>(m.skipped), static_cast<double>(m.clipped), m.loss,
          m.grad_norm, m.learning_rate, m.clip_fraction, m.ratio_mean, m.entropy, m.kl_k1, m.kl_k3, m.reward_mean,
          static_cast<double>(m.has_mismatch), m.token_mult_prob_error, m.gen_kl_error, m.is_weight_mean,
          m.is_truncated_fraction, m.is_masked_fraction, static_cast<double>(m.sequences),
          static_cast<double>(m.completion_tokens), static_cast<double>(m.trained_tokens), m.ratio_min, m.ratio_max,
          m.old_policy_kl, static_cast<double>(m.minibatches)};
}

// Every rank's values, rank after rank (each rank passes as many).
template <class T>
std::vector<T> all_gathered(const std::vector<T>& mine, MPI_Datatype type) {
  std::vector<T> all(mine.size() * static_cast<size_t>(world_size()));
  MPI_Allgather(mine.data(), static_cast<int>(mine.size()), type, all.data(), static_cast<int>(mine.size()), type,
                MPI_COMM_WORLD);
  return all;
}

// Every rank's floats, rank after rank (counts may differ).
std::vector<float> all_gathered_v(const std::vector<float>& mine) {
  const std::vector<int> counts = all_gathered<int>({static_cast<int>(mine.size())}, MPI_INT);
  std::vector<int> displacements(counts.size(), 0);
  for (size_t r = 1; r < counts.size(); ++r) displacements[r] = displacements[r - 1] + counts[r - 1];
  std::vector<float> all(static_cast<size_t>(displacements.back() + counts.back()));
  MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_FLOAT, all.data(), counts.data(),
                 displacements.data(), MPI_FLOAT, MPI_COMM_WORLD);
  return all;
}

double global_sum(double mine) {
  double sum = 0.0;
  MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum;
}

// The master weights as fp8rl_policy_save writes them in F32: the safetensors
// header (names, shapes, offsets) and the data after it.
struct SavedWeights {
  std::string header;
  std::vector<float> data;
};

SavedWeights saved_weights(fp8rl_policy* policy, const std::string& name) {
  const std::filesystem::path folder = std::filesystem::temp_directory_path() /
                                       ("fp8rl_mpi_dp_" + std::to_string(getpid()) + "_" + name);
  REQUIRE_MESSAGE(fp8rl_policy_save(policy, folder.string().c_str(), FP8RL_DTYPE_F32) == FP8RL_OK,
                  std::string(fp8rl_last_error_message()));
  std::ifstream file(folder / "model.safetensors", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(folder);
  REQUIRE(bytes.size() >= 8);
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = header_size << 8 | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  REQUIRE(8 + header_size <= bytes.size());
  SavedWeights saved;
  saved.header = bytes.substr(8, header_size);
  saved.data.resize((bytes.size() - 8 - header_size) / sizeof(float));
  std::memcpy(saved.data.data(), bytes.data() + 8 + header_size, saved.data.size() * sizeof(float));
  return saved;
}

double max_abs_difference(const SavedWeights& a, const SavedWeights& b) {
  REQUIRE(a.header == b.header);
  REQUIRE(a.data.size() == b.data.size());
  double worst = 0.0;
  for (size_t i = 0; i < a.data.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(a.data[i]) - static_cast<double>(b.data[i])));
  return worst;
}

}  // namespace

TEST_CASE("data parallel over MPI: the context knows its rank and world size") {
  const Context context(true);
  int32_t rank = -1, size = -1;
  CHECK(fp8rl_context_get_rank(context.get(), &rank) == FP8RL_OK);
  CHECK(fp8rl_context_get_world_size(context.get(), &size) == FP8RL_OK);
  CHECK(rank == world_rank());
  CHECK(size == world_size());
  const char* description = nullptr;
  REQUIRE(fp8rl_context_get_description(context.get(), &description) == FP8RL_OK);
  CHECK(std::string(description).find("MPI, rank " + std::to_string(world_rank()) + " of " +
                                      std::to_string(world_size())) != std::string::npos);
}

TEST_CASE("data parallel over MPI: every rank holds the same compute weights, generates what it trains on and "
          "reports the same global metrics after every step") {
  for (const NamedRecipe& recipe : recipes()) {
    CAPTURE(std::string(recipe.name));
    CAPTURE(world_rank());
    const Context context(true);
    // Each rank starts elsewhere: the trainer starts every rank from rank 0's weights.
    Policy policy(context.get(), llama_config(), 11 + static_cast<uint64_t>(world_rank()));
    policy.set_recipe(recipe.recipe);
    const Trainer trainer(policy.get());
    uint64_t previous = fingerprint(policy.get());
    CHECK(all_gathered<uint64_t>({previous}, MPI_UINT64_T) ==
          std::vector<uint64_t>(static_cast<size_t>(world_size()), previous));
    for (int iteration = 0; iteration < 3; ++iteration) {
      CAPTURE(iteration);
      const Step step = rollout(policy.get(), share(world_rank(), world_size(), trainer.get()));
      const fp8rl_train_metrics m = iterate(trainer.get(), step);

      const uint64_t print = fingerprint(policy.get());
      CHECK(all_gathered<uint64_t>({print}, MPI_UINT64_T) ==
            std::vector<uint64_t>(static_cast<size_t>(world_size()), print));
      CHECK(print != previous);  // the step changed the weights: the comparison compares something
      previous = print;

      CHECK(m.skipped == 0);
      CHECK(m.has_mismatch == 1);
      CHECK(m.token_mult_prob_error == 1.0);  // logp_old == logp_gen, bit for bit, on every rank
      // Global: counted over all ranks' sequences and tokens, as summed here independently.
      CHECK(m.sequences == groups * group_size);
      CHECK(static_cast<double>(m.completion_tokens) == global_sum(static_cast<double>(step.logp_gen.size())));
      CHECK(m.reward_mean == doctest::Approx(global_sum(step.reward_sum) / (groups * group_size)).epsilon(1e-6));
      const std::vector<double> mine = global_metrics(m);
      const std::vector<double> all = all_gathered<double>(mine, MPI_DOUBLE);
      for (int r = 0; r < world_size(); ++r)
        CHECK(std::memcmp(all.data() + static_cast<size_t>(r) * mine.size(), all.data(),
                          mine.size() * sizeof(double)) == 0);
      CHECK(m.bytes_reduced > 0);
      CHECK(m.bytes_gathered > 0);
      CHECK(m.communication_seconds > 0.0);
    }
  }
}

TEST_CASE("data parallel over MPI: N ranks on the batch split N ways equal one process on the whole batch up to "
          "summation order") {
  for (const NamedRecipe& recipe : recipes()) {
    CAPTURE(std::string(recipe.name));
    CAPTURE(world_rank());
    // The reference, on every rank alike: one process, rank 0's starting weights, the whole batch.
    Context single_context(false);
    Policy single(single_context.get(), llama_config(), 11);
    single.set_recipe(recipe.recipe);
    const SavedWeights initial = saved_weights(single.get(), "initial");
    Step whole;
    fp8rl_train_metrics one{};
    {
      const Trainer trainer(single.get());
      whole = rollout(single.get(), share(0, 1, trainer.get()));
      one = iterate(trainer.get(), whole);
    }
    const SavedWeights single_weights = saved_weights(single.get(), "single");
    REQUIRE(max_abs_difference(single_weights, initial) > 0.0);

    const Context context(true);
    Policy policy(context.get(), llama_config(), 11 + static_cast<uint64_t>(world_rank()));
    policy.set_recipe(recipe.recipe);
    fp8rl_train_metrics many{};
    Step mine;
    {
      const Trainer trainer(policy.get());
      mine = rollout(policy.get(), share(world_rank(), world_size(), trainer.get()));
      many = iterate(trainer.get(), mine);
      // Each rank's masters are whole only in its shard until gathered (collective).
      REQUIRE(fp8rl_trainer_gather_weights(trainer.get()) == FP8RL_OK);
    }
    // One seed stream and rank 0's weights: the ranks' rollouts joined are the single process's, bit for bit.
    CHECK(same_bits(all_gathered_v(mine.logp_gen), whole.logp_gen));
    CHECK(many.completion_tokens == one.completion_tokens);
    CHECK(many.sequences == one.sequences);
    CHECK(many.token_mult_prob_error == 1.0);
    // Only the order of the gradient sums differs: the loss and its gradient's norm to rounding, and the
    // weights after AdamW's first step lr * g / (|g| + eps), which for |g| near eps magnifies a rounding
    // difference of g, bounded by a percent of lr.
    const double difference = max_abs_difference(saved_weights(policy.get(), "rank" + std::to_string(world_rank())),
                                                 single_weights);
    if (world_rank() == 0)
      MESSAGE(std::string(recipe.name) << ", " << world_size() << " MPI ranks vs one process: max |w_N - w_1| = " << difference
                          << " (learning rate 1e-3), |loss_N - loss_1| = " << std::fabs(many.loss - one.loss)
                          << ", |grad_norm_N - grad_norm_1| / grad_norm_1 = "
                          << std::fabs(many.grad_norm - one.grad_norm) / one.grad_norm);
    CHECK(difference <= 1e-2 * 1e-3);
    CHECK(std::fabs(many.loss - one.loss) <= 1e-6 * std::max(1.0, std::fabs(one.loss)));
    CHECK(std::fabs(many.grad_norm - one.grad_norm) <= 1e-5 * one.grad_norm);
  }
}
