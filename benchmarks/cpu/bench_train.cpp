// Training throughput on the CPU backend: train tokens/s (forward + backward
// + optimizer) of a SmolLM2-135M-shaped policy (random weights) under our
// BF16 and FP8 recipes, against PyTorch CPU training the same model on the
// same batch with the same thread count; then the time breakdown of a full RL
// step (generation, logp_old recompute, training, recalibration) for the
// BF16, FP8 and FP8 + KV + attention recipes, with the recalibration fraction.
//
//   fp8rl_bench_train [--threads N] [--quick] [--sequences N] [--length N] [--prompt N] [--steps N]
//                     [--rl-sequences N] [--rl-prompt N] [--rl-new-tokens N] [--rl-steps N]
//                     [--torch-python PATH] [--no-torch] [--backend cpu|cuda] [--model smollm2-135m|llama-3.2-1b]
//                     [--profile]
//
// ./run bench runs it on the CPU with SmolLM2-135M; ./run gpu-check on the
// CUDA backend with Llama-3.2-1B, PyTorch then training on the GPU too.
//
// Method. Throughput: a fixed batch of random sequences (prompt + completion
// tokens), a cross-entropy loss on the completion tokens (the PyTorch
// baseline's loss, so both sides do the same work), Trainer::step() per
// step; train tokens/s = StepMetrics::trained_tokens / seconds.train (the
// forward over all but each sequence's last token, the head on the
// completion positions, backward, gradient clipping, AdamW), median of
// --steps steps after a warm-up step (the first step also builds the
// transposed weights the backward reads). RL step: rollout::generate() of one
// completion per prompt (temperature 1), timed as the batch's generation
// seconds, then a clipped policy-gradient step with given advantages
// (importance weighting off, logp_gen passed for the mismatch metrics);
// medians of --rl-steps steps after a warm-up step. Each recipe starts from
// the same random weights. Profile (--profile, CPU backend only): where the
// time of one throughput step goes per backend operation, BF16 and FP8
// (op_profile.h), after a warm-up step, on a separate profiled backend.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "core/context.h"
#include "core/io/json.h"
#include "core/model/model_params.h"
#include "core/policy/policy.h"
#include "core/rollout/rollout.h"
#include "core/train/trainer.h"
#include "kernels/cpu/cpu_backend.h"
#include "op_profile.h"

#ifndef FP8RL_TORCH_TRAIN_SCRIPT
#define FP8RL_TORCH_TRAIN_SCRIPT "torch_train_baseline.py"
#endif
#ifndef FP8RL_DEFAULT_TORCH_PYTHON
#define FP8RL_DEFAULT_TORCH_PYTHON "/usr/bin/python3"
#endif

namespace {

using fp8rl::bench::Clock;
using fp8rl::bench::llama_3_2_1b;
using fp8rl::bench::median;
using fp8rl::bench::seconds_since;
using fp8rl::bench::smollm2_135m;

using namespace fp8rl;

struct Options {
  int threads = 0;
  bool quick = false;
  // Throughput batch: sequences x length tokens, the first `prompt` of each a prompt.
  int sequences = 4;
  int length = 128;
  int prompt = -1;  // -1: length / 4
  int steps = 5;
  // RL step batch: smaller, since generation decodes token by token.
  int rl_sequences = 2;
  int rl_prompt = 32;
  int rl_new_tokens = 32;
  int rl_steps = 3;
  std::string torch_python;
  bool torch = true;
  bool cuda = false;
  std::string model = "smollm2-135m";
  bool profile = false;
};

[[noreturn]] void usage(const char* program) {
  std::fprintf(stderr,
               "usage: %s [--threads N] [--quick] [--sequences N] [--length N] [--prompt N] [--steps N]\n"
               "          [--rl-sequences N] [--rl-prompt N] [--rl-new-tokens N] [--rl-steps N]\n"
               "          [--torch-python PATH] [--no-torch] [--backend cpu|cuda]\n"
               "          [--model smollm2-135m|llama-3.2-1b] [--profile]\n",
               program);
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  Options options;
  const char* env = std::getenv("FP8RL_TORCH_PYTHON");
  options.torch_python = env != nullptr && *env != '\0' ? env : FP8RL_DEFAULT_TORCH_PYTHON;
  struct IntFlag {
    const char* name;
    int* value;
  };
  const IntFlag int_flags[] = {{"--threads", &options.threads},     {"--sequences", &options.sequences},
                               {"--length", &options.length},       {"--prompt", &options.prompt},
                               {"--steps", &options.steps},         {"--rl-sequences", &options.rl_sequences},
                               {"--rl-prompt", &options.rl_prompt}, {"--rl-new-tokens", &options.rl_new_tokens},
                               {"--rl-steps", &options.rl_steps}};
  for (int i = 1; i < argc; ++i) {
    const IntFlag* flag = nullptr;
    for (const IntFlag& f : int_flags) {
      if (std::strcmp(argv[i], f.name) == 0) flag = &f;
    }
    if (flag != nullptr && i + 1 < argc) {
      *flag->value = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--quick") == 0) {
      options.quick = true;
    } else if (std::strcmp(argv[i], "--no-torch") == 0) {
      options.torch = false;
    } else if (std::strcmp(argv[i], "--profile") == 0) {
      options.profile = true;
    } else if (std::strcmp(argv[i], "--torch-python") == 0 && i + 1 < argc) {
      options.torch_python = argv[++i];
    } else if (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      const std::string backend = argv[++i];
      if (backend != "cpu" && backend != "cuda") usage(argv[0]);
      options.cuda = backend == "cuda";
    } else if (std::strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
      options.model = argv[++i];
      if (options.model != "smollm2-135m" && options.model != "llama-3.2-1b") usage(argv[0]);
    } else {
      usage(argv[0]);
    }
  }
  if (options.quick) {  // a smoke run: tiny batches, one measured step each
    options.sequences = 1;
    options.length = 16;
    options.prompt = 4;
    options.steps = 1;
    options.rl_sequences = 1;
    options.rl_prompt = 4;
    options.rl_new_tokens = 4;
    options.rl_steps = 1;
  }
  if (options.prompt < 0) options.prompt = options.length / 4;
  if (options.sequences < 1 || options.length < 2 || options.prompt < 1 || options.prompt >= options.length ||
      options.steps < 1 || options.rl_sequences < 1 || options.rl_prompt < 1 || options.rl_new_tokens < 1 ||
      options.rl_steps < 1) {
    std::fprintf(stderr, "sizes must be >= 1, length >= 2 and prompt < length\n");
    usage(argv[0]);
  }
  return options;
}

struct NamedRecipe {
  const char* name;
  policy::Recipe recipe;
};

std::vector<NamedRecipe> recipes(bool with_fp8_attention) {
  std::vector<NamedRecipe> out(2);
  out[0].name = "BF16";
  out[1].name = "FP8";
  out[1].recipe.linear = policy::Precision::fp8;
  if (with_fp8_attention) {
    NamedRecipe all{"FP8+KV+attn", out[1].recipe};
    all.recipe.kv_cache = policy::Precision::fp8;
    all.recipe.attention = policy::Precision::fp8;
    out.push_back(all);
  }
  return out;
}

// Sequences (prompt then completion) with what a TrainBatch borrows.
struct SequenceBatch {
  std::vector<int32_t> tokens;          // [total tokens], sequence after sequence
  std::vector<int64_t> offsets{0};      // [count + 1]
  std::vector<int64_t> prompt_lengths;  // [count]
  std::vector<float> logp_gen;          // [completion tokens]; RL batches only
  std::vector<float> advantages;        // [count]; RL batches only
  double generation_seconds = 0.0;

  void add(const std::vector<int32_t>& sequence, int64_t prompt_length) {
    tokens.insert(tokens.end(), sequence.begin(), sequence.end());
    offsets.push_back(static_cast<int64_t>(tokens.size()));
    prompt_lengths.push_back(prompt_length);
  }
  rollout::TokenSequences sequences() const {
    return rollout::TokenSequences{tokens.data(), offsets.data(), static_cast<int64_t>(prompt_lengths.size())};
  }
  train::TrainBatch view() const {
    train::TrainBatch batch;
    batch.sequences = sequences();
    batch.prompt_lengths = prompt_lengths.data();
    if (!logp_gen.empty()) batch.logp_gen = logp_gen.data();
    if (!advantages.empty()) batch.advantages = advantages.data();
    batch.generation_seconds = generation_seconds;
    return batch;
  }
};

// `count` random sequences of `length` tokens (the same on every run).
SequenceBatch random_sequences(int count, int length, int prompt, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocab) - 1);
  SequenceBatch batch;
  std::vector<int32_t> sequence(static_cast<size_t>(length));
  for (int s = 0; s < count; ++s) {
    for (int32_t& t : sequence) t = token(rng);
    batch.add(sequence, prompt);
  }
  return batch;
}

// ---------------------------------------------------------------- throughput

struct Throughput {
  const char* name = "";
  int64_t trained_tokens = 0;            // per step
  std::vector<double> train_seconds;     // measured steps
  std::vector<double> recalibration;     // measured steps
  double first_loss = 0, last_loss = 0;  // sanity: the steps train

  double seconds() const { return median(train_seconds); }
  double tokens_per_second() const { return static_cast<double>(trained_tokens) / seconds(); }
};

train::TrainerOptions cross_entropy_options() {
  train::TrainerOptions options;
  options.loss.kind = train::LossKind::cross_entropy;  // token mean over the completion tokens
  options.schedule.base_lr = 1e-4;
  options.micro_batch_tokens = 4096;  // the whole batch in one pass, as PyTorch runs it
  return options;
}

Throughput measure_throughput(Context& context, const model::ModelParams& params, const NamedRecipe& recipe,
                              const SequenceBatch& batch, int steps) {
  policy::Policy policy(context, params, recipe.recipe);
  train::Trainer trainer(policy, cross_entropy_options());
  Throughput result;
  result.name = recipe.name;
  for (int step = 0; step <= steps; ++step) {  // step 0 warms up
    const train::StepMetrics m = trainer.step(batch.view());
    if (m.skipped) std::fprintf(stderr, "[bench_train] %s step skipped: %s\n", recipe.name, m.skip_reason.c_str());
    std::fprintf(stderr, "[bench_train] %s step %d: train %.2f s, recalibration %.2f s, loss %.4f\n", recipe.name, step,
                 m.seconds.train, m.seconds.recalibration, m.loss);
    if (step == 0) result.first_loss = m.loss;
    result.last_loss = m.loss;
    if (step == 0) continue;
    result.trained_tokens = m.trained_tokens;
    result.train_seconds.push_back(m.seconds.train);
    result.recalibration.push_back(m.seconds.recalibration);
  }
  return result;
}

// The per-operation breakdown of one Trainer::step() on the throughput batch
// (forward, backward, clipping, AdamW, recalibration), BF16 and FP8. Its own
// context, whose CPU backend the profiler wraps, so that the steps measured
// above are not wrapped; a warm-up step per recipe, then one profiled step.
void print_op_profiles(int threads, const model::ModelParams& params, const SequenceBatch& batch) {
  auto backend = std::make_unique<bench::ProfilingBackend>(make_cpu_backend(threads), threads);
  bench::ProfilingBackend& profiler = *backend;
  Context context(std::move(backend), Logger(), threads);
  std::printf("\nwhere the time of one training step goes per backend operation (%d threads):\n", threads);
  for (const NamedRecipe& recipe : recipes(false)) {
    policy::Policy policy(context, params, recipe.recipe);
    train::Trainer trainer(policy, cross_entropy_options());
    trainer.step(batch.view());
    profiler.reset();
    const Clock::time_point start = Clock::now();
    const train::StepMetrics m = trainer.step(batch.view());
    const double seconds = seconds_since(start);
    char title[160];
    std::snprintf(title, sizeof title, "%s training step (train %.2f s + recalibration %.2f s)", recipe.name,
                  m.seconds.train, m.seconds.recalibration);
    profiler.print_table(stdout, title, seconds);
  }
}

// ------------------------------------------------------------------ RL step

struct RlStep {
  const char* name = "";
  std::vector<double> generation, recompute, train, recalibration, fraction;  // per measured step
  int64_t completion_tokens = 0;
  double gen_kl_error = 0;  // generator vs recomputed logp_old, last step
};

// Generates one completion per prompt and lays the batch out for the trainer,
// advantages +1 / -1 alternating (given, so no reward model is needed).
SequenceBatch generate_rl_batch(policy::Policy& policy, train::Trainer& trainer, const SequenceBatch& prompts,
                                int new_tokens) {
  rollout::SamplingOptions sampling;
  sampling.max_new_tokens = new_tokens;
  sampling.stop_at_eos = false;  // fixed-length completions: the same work every step
  const rollout::TokenSequences view = prompts.sequences();
  const std::vector<uint64_t> seeds = trainer.next_seeds(view.count);
  const Clock::time_point start = Clock::now();
  const std::vector<rollout::Rollout> rollouts = rollout::generate(policy, view, seeds, sampling);
  SequenceBatch batch;
  batch.generation_seconds = seconds_since(start);
  for (int64_t i = 0; i < view.count; ++i) {
    std::vector<int32_t> sequence(view.sequence(i), view.sequence(i) + view.length(i));
    const std::vector<int32_t>& completion = rollouts[static_cast<size_t>(i)].tokens;
    sequence.insert(sequence.end(), completion.begin(), completion.end());
    batch.add(sequence, view.length(i));
    const std::vector<float>& logprobs = rollouts[static_cast<size_t>(i)].logprobs;
    batch.logp_gen.insert(batch.logp_gen.end(), logprobs.begin(), logprobs.end());
    batch.advantages.push_back(i % 2 == 0 ? 1.0f : -1.0f);
  }
  return batch;
}

train::TrainerOptions policy_gradient_options() {
  train::TrainerOptions options;
  options.loss.kind = train::LossKind::clipped_policy_gradient;
  options.loss.importance.mode = train::ImportanceMode::off;
  options.schedule.base_lr = 1e-4;
  options.micro_batch_tokens = 4096;
  return options;
}

RlStep measure_rl_step(Context& context, const model::ModelParams& params, const NamedRecipe& recipe,
                       const SequenceBatch& prompts, const Options& options) {
  policy::Policy policy(context, params, recipe.recipe);
  train::Trainer trainer(policy, policy_gradient_options());
  RlStep result;
  result.name = recipe.name;
  for (int step = 0; step <= options.rl_steps; ++step) {  // step 0 warms up
    const SequenceBatch batch = generate_rl_batch(policy, trainer, prompts, options.rl_new_tokens);
    const train::StepMetrics m = trainer.step(batch.view());
    std::fprintf(stderr,
                 "[bench_train] RL %s step %d: generation %.2f s, recompute %.2f s, train %.2f s, recalibration "
                 "%.2f s\n",
                 recipe.name, step, m.seconds.generation, m.seconds.recompute, m.seconds.train,
                 m.seconds.recalibration);
    if (step == 0) continue;
    result.generation.push_back(m.seconds.generation);
    result.recompute.push_back(m.seconds.recompute);
    result.train.push_back(m.seconds.train);
    result.recalibration.push_back(m.seconds.recalibration);
    result.fraction.push_back(m.recalibration_fraction);
    result.completion_tokens = m.completion_tokens;
    result.gen_kl_error = m.mismatch.gen_kl_error;
  }
  return result;
}

// ------------------------------------------------------------------ PyTorch

struct TorchResult {
  std::string mode;  // float32 or bf16_autocast
  double tokens_per_second = 0;
  double seconds = 0;
  std::string error;  // the mode failed in this torch
};

std::string run_command(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
  pclose(pipe);
  return output;
}

std::vector<TorchResult> run_torch_baseline(const Options& options, int threads, std::string* note) {
  std::vector<TorchResult> results;
  if (!options.torch) {
    *note = "PyTorch baseline: skipped (--no-torch)";
    return results;
  }
  // A short GNU OpenMP spin, as bench_rollout measured best for this torch
  // (long spinning workers fight OpenBLAS's threads for the cores).
  const std::string command = "GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000} '" + options.torch_python + "' '" +
                              FP8RL_TORCH_TRAIN_SCRIPT + "' --threads " + std::to_string(threads) + " --sequences " +
                              std::to_string(options.sequences) + " --prompt " + std::to_string(options.prompt) +
                              " --completion " + std::to_string(options.length - options.prompt) + " --steps " +
                              std::to_string(options.steps) + " --device " + (options.cuda ? "cuda" : "cpu") +
                              " --model " + options.model + " 2>/dev/null";
  const std::string output = run_command(command);
  try {
    // The JSON object is the last line that names "available".
    const size_t line = output.find_last_of('{', output.rfind("\"available\""));
    const io::Json doc = io::parse_json(line == std::string::npos ? output : output.substr(line), "torch baseline");
    if (!doc.at("available").as_bool()) {
      *note = "PyTorch baseline: unavailable (" + doc.at("reason").as_string() + ")";
      return results;
    }
    for (const io::Json& r : doc.at("results").elements()) {
      TorchResult t;
      t.mode = r.at("mode").as_string();
      if (const io::Json* error = r.find("error")) {
        t.error = error->as_string();
      } else {
        t.tokens_per_second = r.at("tokens_per_s").as_double();
        t.seconds = r.at("seconds").as_double();
      }
      results.push_back(t);
    }
    *note = "PyTorch baseline: torch " + doc.at("torch_version").as_string() + " (" + options.torch_python +
            "), plain eager Llama written out (fused qkv and gate/up, " + doc.at("attention").as_string() +
            " attention), AdamW, clip 1.0, " + std::to_string(doc.at("threads").as_int64()) +
            " threads, GOMP_SPINCOUNT=1000";
  } catch (const std::exception&) {
    *note =
        "PyTorch baseline: unavailable (" + options.torch_python + " could not run " + FP8RL_TORCH_TRAIN_SCRIPT + ")";
    results.clear();
  }
  return results;
}

const TorchResult* find_torch(const std::vector<TorchResult>& results, const char* mode) {
  for (const TorchResult& r : results) {
    if (r.mode == mode && r.error.empty()) return &r;
  }
  return nullptr;
}

// ------------------------------------------------------------------- tables

// "1.23x", or "-" without a baseline.
std::string ratio(double ours, double theirs) {
  if (!(theirs > 0)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", ours / theirs);
  return text;
}

void print_throughput_table(const std::vector<Throughput>& ours, const std::vector<TorchResult>& torch) {
  const TorchResult* bf16 = find_torch(torch, "bf16_autocast");
  const TorchResult* fp32 = find_torch(torch, "float32");
  const double torch_bf16 = bf16 ? bf16->tokens_per_second : 0, torch_fp32 = fp32 ? fp32->tokens_per_second : 0;
  const double ours_bf16 = ours.empty() ? 0 : ours[0].tokens_per_second();
  std::printf("\n%-22s %10s %8s %14s %14s %10s\n", "training", "tokens/s", "s/step", "vs torch bf16", "vs torch fp32",
              "vs BF16");
  for (const Throughput& run : ours) {
    const double tps = run.tokens_per_second();
    std::printf("%-22s %10.1f %8.2f %14s %14s %10s\n", (std::string("ours ") + run.name).c_str(), tps, run.seconds(),
                ratio(tps, torch_bf16).c_str(), ratio(tps, torch_fp32).c_str(), ratio(tps, ours_bf16).c_str());
  }
  for (const TorchResult& t : torch) {
    const std::string name = "PyTorch " + t.mode;
    if (!t.error.empty()) {
      std::printf("%-22s failed: %s\n", name.c_str(), t.error.c_str());
      continue;
    }
    std::printf("%-22s %10.1f %8.2f %14s %14s %10s\n", name.c_str(), t.tokens_per_second, t.seconds,
                ratio(t.tokens_per_second, torch_bf16).c_str(), ratio(t.tokens_per_second, torch_fp32).c_str(),
                ratio(t.tokens_per_second, ours_bf16).c_str());
  }
}

void print_rl_table(const std::vector<RlStep>& steps) {
  std::printf("\n%-12s %11s %10s %8s %14s %8s %12s %14s\n", "RL step (s)", "generation", "recompute", "train",
              "recalibration", "total", "recal share", "gen_kl_error");
  for (const RlStep& s : steps) {
    const double total = median(s.generation) + median(s.recompute) + median(s.train) + median(s.recalibration);
    std::printf("%-12s %11.2f %10.2f %8.2f %14.2f %8.2f %11.1f%% %14.2e\n", s.name, median(s.generation),
                median(s.recompute), median(s.train), median(s.recalibration), total, 100.0 * median(s.fraction),
                s.gen_kl_error);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  const Clock::time_point bench_start = Clock::now();
  BackendRequest request;
  request.choice = options.cuda ? BackendChoice::cuda : BackendChoice::cpu;
  request.num_threads = options.threads;
  Context context(request, Logger());
  const int threads = context.num_threads();
  const model::ModelConfig config = options.model == "llama-3.2-1b" ? llama_3_2_1b() : smollm2_135m();
  const int completion = options.length - options.prompt;

  std::printf(
      "fp8rl training benchmark: %s shapes (llama, vocab %lld, hidden %lld, %lld layers, %lld/%lld heads,\n"
      "head_dim %lld, intermediate %lld, tied), random weights\n",
      options.model.c_str(), static_cast<long long>(config.vocab_size), static_cast<long long>(config.hidden_size),
      static_cast<long long>(config.num_layers), static_cast<long long>(config.num_attention_heads),
      static_cast<long long>(config.num_key_value_heads), static_cast<long long>(config.head_dim),
      static_cast<long long>(config.intermediate_size));
  std::printf("machine: %s; %u hardware threads\n", context.description().c_str(), std::thread::hardware_concurrency());
  std::fflush(stdout);

  const model::ModelParams params = model::random_model_params(config, /*seed=*/7);

  // 1. Training throughput, BF16 and FP8, on one fixed batch.
  const SequenceBatch batch =
      random_sequences(options.sequences, options.length, options.prompt, config.vocab_size, 11);
  std::vector<Throughput> throughput;
  for (const NamedRecipe& recipe : recipes(false)) {
    throughput.push_back(measure_throughput(context, params, recipe, batch, options.steps));
    std::fprintf(stderr, "[bench_train] throughput %s done at %.0f s\n", recipe.name, seconds_since(bench_start));
  }

  // 2. Full RL steps on a smaller batch, every recipe.
  const SequenceBatch prompts =
      random_sequences(options.rl_sequences, options.rl_prompt, options.rl_prompt, config.vocab_size, 13);
  std::vector<RlStep> rl;
  for (const NamedRecipe& recipe : recipes(true)) {
    rl.push_back(measure_rl_step(context, params, recipe, prompts, options));
    std::fprintf(stderr, "[bench_train] RL step %s done at %.0f s\n", recipe.name, seconds_since(bench_start));
  }

  // 3. PyTorch on the throughput batch (after ours, so neither competes with the other).
  std::string torch_note;
  const Clock::time_point torch_start = Clock::now();
  const std::vector<TorchResult> torch = run_torch_baseline(options, threads, &torch_note);
  std::fprintf(stderr, "[bench_train] PyTorch baseline took %.0f s\n", seconds_since(torch_start));

  std::printf(
      "\ntraining throughput: %d sequences x %d tokens (prompt %d, completion %d) = %lld trained tokens a step\n"
      "(all but each sequence's last token), token-mean cross-entropy on the completion tokens, AdamW, clip 1.0;\n"
      "median of %d steps after a warm-up step, %d threads\n",
      options.sequences, options.length, options.prompt, completion,
      static_cast<long long>(throughput.empty() ? 0 : throughput[0].trained_tokens), options.steps, threads);
  print_throughput_table(throughput, torch);
  std::printf("%s\n", torch_note.c_str());
  for (const Throughput& run : throughput) {
    std::printf("  ours %-5s loss %.4f (warm-up step) -> %.4f (last step); recalibration after each step %.2f s\n",
                run.name, run.first_loss, run.last_loss, median(run.recalibration));
  }

  std::printf(
      "\nfull RL step: %d prompts x %d tokens, %d new tokens each (temperature 1), clipped policy gradient with\n"
      "given advantages, importance weighting off; medians of %d steps after a warm-up step. recal share =\n"
      "StepMetrics::recalibration_fraction = recalibration / (generation + recompute + train + recalibration)\n",
      options.rl_sequences, options.rl_prompt, options.rl_new_tokens, options.rl_steps);
  print_rl_table(rl);
  std::printf("\ntotal benchmark time %.0f s\n", seconds_since(bench_start));
  if (options.profile && options.cuda) {
    std::printf("\nper-operation profile skipped: it times calls, which the CUDA backend only queues\n");
  } else if (options.profile) {
    print_op_profiles(threads, params, batch);
  }
  return 0;
}
