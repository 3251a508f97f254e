// Data parallelism on the CPU: one GRPO iteration (rollouts, then the
// trainer's iteration) of a global batch, run by however many MPI ranks the
// launcher started (one process without one), each rank taking whole groups.
// Rank 0 prints one JSON line: the median iteration seconds, the bytes this
// rank moved in collectives per iteration (and what an FP32 all-gather of the
// master weights would have received instead), and every rank's trainer
// memory. benchmarks/cpu/data_parallel.py runs it as 1 rank x 2 threads,
// 2 ranks x 1 thread, 1 rank x 1 thread and 3 ranks, and tabulates.
//
//   [mpirun -n N] fp8rl_bench_data_parallel [--threads T] [--recipe bf16|fp8] [--iterations N]
//
// Method: a Llama-shaped random policy (hidden 256, 4 layers, vocabulary
// 4096), 16 prompts x 4 completions of 24 new tokens per iteration, the
// clipped policy-gradient loss with group advantages; one warm-up iteration,
// then the median of --iterations (each rank's own clock; the iteration ends
// in collectives, so the ranks finish together).
#include <fp8rl/fp8rl.h>
#include <fp8rl/fp8rl_mpi.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr int kPrompts = 16, kGroup = 4, kPromptLength = 8, kNewTokens = 24;

void check(fp8rl_status status, const char* what) {
  if (status != FP8RL_OK) throw std::runtime_error(std::string(what) + ": " + fp8rl_last_error_message());
}

struct Options {
  int threads = 1;
  std::string recipe = "fp8";
  int iterations = 3;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--threads") o.threads = std::atoi(argv[i + 1]);
    else if (flag == "--recipe") o.recipe = argv[i + 1];
    else if (flag == "--iterations") o.iterations = std::atoi(argv[i + 1]);
    else throw std::runtime_error("unknown flag " + flag);
  }
  return o;
}

fp8rl_model_config bench_config() {
  fp8rl_model_config c;
  check(fp8rl_model_config_init(&c), "fp8rl_model_config_init");
  c.vocab_size = 4096;
  c.hidden_size = 256;
  c.num_layers = 4;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.intermediate_size = 768;
  c.max_position_embeddings = 64;
  return c;
}

struct Iteration {
  double seconds = 0;
  fp8rl_train_metrics metrics{};
};

// One GRPO iteration on this rank's groups [first, last) of the global batch.
Iteration iterate(fp8rl_policy* policy, fp8rl_trainer* trainer, int first, int last, int iteration) {
  const auto start = std::chrono::steady_clock::now();
  const int sequences = (last - first) * kGroup;
  std::vector<int32_t> prompts;
  std::vector<int64_t> prompt_offsets{0}, prompt_lengths;
  for (int s = 0; s < sequences; ++s) {
    const int group = first + s / kGroup;
    for (int j = 0; j < kPromptLength; ++j) prompts.push_back((iteration * 131 + group * 17 + j * 7) % 4000 + 1);
    prompt_offsets.push_back(static_cast<int64_t>(prompts.size()));
    prompt_lengths.push_back(kPromptLength);
  }
  std::vector<uint64_t> seeds(static_cast<size_t>(sequences));
  check(fp8rl_trainer_next_seeds(trainer, sequences, seeds.data()), "fp8rl_trainer_next_seeds");
  fp8rl_sampling_options sampling;
  check(fp8rl_sampling_options_init(&sampling), "fp8rl_sampling_options_init");
  sampling.max_new_tokens = kNewTokens;
  sampling.stop_at_eos = 0;
  fp8rl_rollout* rollout = nullptr;
  check(fp8rl_policy_generate(policy, prompts.data(), prompt_offsets.data(), sequences, seeds.data(), &sampling,
                              &rollout),
        "fp8rl_policy_generate");
  std::vector<int32_t> completions(static_cast<size_t>(sequences * kNewTokens));
  std::vector<float> logprobs(completions.size());
  std::vector<int64_t> completion_offsets(static_cast<size_t>(sequences) + 1);
  check(fp8rl_rollout_copy(rollout, completions.data(), logprobs.data(), static_cast<int64_t>(completions.size()),
                           completion_offsets.data(), nullptr),
        "fp8rl_rollout_copy");
  fp8rl_rollout_destroy(rollout);
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  std::vector<float> rewards;
  for (int s = 0; s < sequences; ++s) {
    tokens.insert(tokens.end(), prompts.begin() + prompt_offsets[s], prompts.begin() + prompt_offsets[s + 1]);
    int even = 0;
    for (int64_t t = completion_offsets[s]; t < completion_offsets[s + 1]; ++t) {
      tokens.push_back(completions[static_cast<size_t>(t)]);
      even += completions[static_cast<size_t>(t)] % 2 == 0;
    }
    offsets.push_back(static_cast<int64_t>(tokens.size()));
    rewards.push_back(static_cast<float>(even) / kNewTokens);  // any reward that varies within a group
  }
  fp8rl_train_batch batch;
  check(fp8rl_train_batch_init(&batch), "fp8rl_train_batch_init");
  batch.tokens = tokens.data();
  batch.offsets = offsets.data();
  batch.num_sequences = sequences;
  batch.prompt_lengths = prompt_lengths.data();
  batch.num_completion_tokens = completion_offsets.back();
  batch.logp_gen = logprobs.data();
  batch.rewards = rewards.data();
  Iteration result;
  check(fp8rl_train_metrics_init(&result.metrics), "fp8rl_train_metrics_init");
  check(fp8rl_trainer_iterate(trainer, &batch, &result.metrics, nullptr, 0), "fp8rl_trainer_iterate");
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  fp8rl_communicator* communicator = nullptr;
  check(fp8rl_mpi_communicator_create(MPI_Comm_c2f(MPI_COMM_WORLD), &communicator), "fp8rl_mpi_communicator_create");
  int32_t rank = 0, size = 1;
  check(fp8rl_communicator_get_rank(communicator, &rank, &size), "fp8rl_communicator_get_rank");
  fp8rl_context_options context_options;
  check(fp8rl_context_options_init(&context_options), "fp8rl_context_options_init");
  context_options.backend = FP8RL_BACKEND_CPU;
  context_options.num_threads = o.threads;
  context_options.communicator = communicator;
  fp8rl_context* context = nullptr;
  check(fp8rl_context_create(&context_options, &context), "fp8rl_context_create");
  fp8rl_communicator_destroy(communicator);

  const fp8rl_model_config config = bench_config();
  fp8rl_policy* policy = nullptr;
  check(fp8rl_policy_create_random(context, &config, 1, &policy), "fp8rl_policy_create_random");
  fp8rl_recipe recipe;
  check(fp8rl_recipe_init(&recipe), "fp8rl_recipe_init");
  if (o.recipe == "fp8") recipe.linear = FP8RL_PRECISION_FP8;
  check(fp8rl_policy_set_recipe(policy, &recipe), "fp8rl_policy_set_recipe");
  fp8rl_trainer_options options;
  check(fp8rl_trainer_options_init(&options), "fp8rl_trainer_options_init");
  options.learning_rate = 1e-4;
  options.group_size = kGroup;
  fp8rl_trainer* trainer = nullptr;
  check(fp8rl_trainer_create(policy, &options, &trainer), "fp8rl_trainer_create");

  const int first = kPrompts * rank / size, last = kPrompts * (rank + 1) / size;
  iterate(policy, trainer, first, last, 0);  // warm-up: builds the transposed weights, fills caches
  std::vector<double> seconds;
  Iteration last_iteration;
  for (int i = 1; i <= o.iterations; ++i) {
    last_iteration = iterate(policy, trainer, first, last, i);
    seconds.push_back(last_iteration.seconds);
  }
  std::sort(seconds.begin(), seconds.end());
  fp8rl_memory_report memory;
  check(fp8rl_memory_report_init(&memory), "fp8rl_memory_report_init");
  check(fp8rl_trainer_memory(trainer, &memory), "fp8rl_trainer_memory");
  int64_t parameters = 0;
  check(fp8rl_policy_parameter_count(policy, &parameters), "fp8rl_policy_parameter_count");
  std::vector<long long> optimizer(static_cast<size_t>(size));
  const long long mine = memory.optimizer_state;
  MPI_Gather(&mine, 1, MPI_LONG_LONG, optimizer.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);

  if (rank == 0) {
    std::string per_rank;
    for (size_t r = 0; r < optimizer.size(); ++r) per_rank += (r ? "," : "") + std::to_string(optimizer[r]);
    // What rank 0 would receive gathering everyone else's FP32 masters.
    const double fp32_gather = 4.0 * static_cast<double>(parameters) * (size - 1) / size;
    std::printf(
        "{\"ranks\":%d,\"threads\":%d,\"recipe\":\"%s\",\"parameters\":%lld,\"iteration_seconds\":%.4f,"
        "\"bytes_reduced\":%lld,\"bytes_gathered\":%lld,\"fp32_master_gather_bytes\":%.0f,"
        "\"communication_seconds\":%.4f,\"optimizer_state_bytes\":[%s],\"gradient_bytes\":%lld}\n",
        size, o.threads, o.recipe.c_str(), static_cast<long long>(parameters), seconds[seconds.size() / 2],
        static_cast<long long>(last_iteration.metrics.bytes_reduced),
        static_cast<long long>(last_iteration.metrics.bytes_gathered), fp32_gather,
        last_iteration.metrics.communication_seconds, per_rank.c_str(), static_cast<long long>(memory.gradients));
  }
  fp8rl_trainer_destroy(trainer);
  fp8rl_policy_destroy(policy);
  fp8rl_context_destroy(context);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    status = run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fp8rl_bench_data_parallel: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
