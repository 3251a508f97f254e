// Rollout throughput on the CPU backend: prefill and decode tokens/s of a
// SmolLM2-135M-shaped policy (random weights) for the BF16, FP8,
// FP8 + KV + attention and FP8 + FP8-head recipes, against plain PyTorch on the same shapes,
// batch sizes and thread count, plus the machine's memory bandwidth.
//
//   fp8rl_bench_rollout [--threads N] [--quick] [--new-tokens N] [--repeats N (batch 32: N - 1)]
//                       [--torch-python PATH] [--no-torch] [--profile] [--batch1-only]
//
// --batch1-only skips batch 32 (benchmarks/peers/peers.py compares batch 1
// with llama.cpp and runs this several times).
//
// Method: the engine's own loop, driven directly through the policy's
// ModelRunner so that the two phases are timed apart. Prefill: one forward
// pass over batch x 128 prompt tokens (chunked at 2048 tokens per pass, as
// generate() does) ending with sampling of the first new token. Decode:
// new_tokens steps of one token per sequence, each a forward pass plus
// greedy sampling (backend.sample) whose tokens feed the next step, exactly
// what generate() runs per step. Medians of --repeats runs after a warm-up
// (batch 32: one run fewer, no warm-up, to keep the whole run near 5 min).
// A batch-1 generate() call checks that the loop matches the real engine.
// Last, where the time of a batch-1 decode of 16 tokens goes per backend
// operation, BF16 and FP8 (op_profile.h), on a separate profiled backend;
// --profile adds the 128-token prefill's breakdown and decodes --new-tokens.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "core/context.h"
#include "core/io/json.h"
#include "core/model/model_params.h"
#include "core/policy/compiled_model.h"
#include "core/policy/model_runner.h"
#include "core/policy/policy.h"
#include "core/rollout/rollout.h"
#include "kernels/cpu/cpu_backend.h"
#include "op_profile.h"

#ifndef FP8RL_TORCH_BASELINE_SCRIPT
#define FP8RL_TORCH_BASELINE_SCRIPT "torch_rollout_baseline.py"
#endif
#ifndef FP8RL_DEFAULT_TORCH_PYTHON
#define FP8RL_DEFAULT_TORCH_PYTHON "/usr/bin/python3"
#endif

namespace {

using fp8rl::bench::Clock;
using fp8rl::bench::median;
using fp8rl::bench::seconds_since;
using fp8rl::bench::smollm2_135m;

using namespace fp8rl;

constexpr int kPromptLength = 128;

struct Options {
  int threads = 0;
  bool quick = false;
  int new_tokens = 32;
  int repeats = 3;
  std::string torch_python;
  bool torch = true;
  bool profile = false;
  bool batch1_only = false;
};

Options parse_options(int argc, char** argv) {
  Options options;
  const char* env = std::getenv("FP8RL_TORCH_PYTHON");
  options.torch_python = env != nullptr && *env != '\0' ? env : FP8RL_DEFAULT_TORCH_PYTHON;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--quick") == 0) {
      options.quick = true;
    } else if (std::strcmp(argv[i], "--no-torch") == 0) {
      options.torch = false;
    } else if (std::strcmp(argv[i], "--profile") == 0) {
      options.profile = true;
    } else if (std::strcmp(argv[i], "--batch1-only") == 0) {
      options.batch1_only = true;
    } else if (std::strcmp(argv[i], "--threads") == 0 && has_value) {
      options.threads = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--new-tokens") == 0 && has_value) {
      options.new_tokens = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--repeats") == 0 && has_value) {
      options.repeats = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--torch-python") == 0 && has_value) {
      options.torch_python = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--threads N] [--quick] [--new-tokens N] [--repeats N] [--torch-python PATH] "
                   "[--no-torch] [--profile] [--batch1-only]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  if (options.quick) {
    options.new_tokens = std::min(options.new_tokens, 8);
    options.repeats = 1;
  }
  return options;
}

// Multi-threaded streaming read of a buffer far larger than the caches:
// each thread sums its contiguous share as 64-bit integers (vectorizable,
// no floating-point dependency chain). Median GB/s of several passes.
double memory_bandwidth_gbs(int threads, size_t bytes, int passes) {
  const size_t words = bytes / sizeof(uint64_t);
  std::unique_ptr<uint64_t[]> buffer(new uint64_t[words]);
  auto for_each_share = [&](const std::function<void(size_t, size_t)>& body) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      const size_t begin = words * static_cast<size_t>(t) / static_cast<size_t>(threads);
      const size_t end = words * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
      pool.emplace_back(body, begin, end);
    }
    for (std::thread& thread : pool) thread.join();
  };
  // First touch by the threads that read it (page placement), non-zero data.
  for_each_share([&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) buffer[i] = i * 0x9E3779B97F4A7C15ull;
  });
  std::atomic<uint64_t> sink{0};
  std::vector<double> rates;
  for (int pass = 0; pass < passes; ++pass) {
    const Clock::time_point start = Clock::now();
    for_each_share([&](size_t begin, size_t end) {
      uint64_t sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      size_t i = begin;
      for (; i + 8 <= end; i += 8) {
        for (int lane = 0; lane < 8; ++lane) sum[lane] += buffer[i + static_cast<size_t>(lane)];
      }
      for (; i < end; ++i) sum[0] += buffer[i];
      uint64_t total = 0;
      for (uint64_t s : sum) total += s;
      sink.fetch_add(total, std::memory_order_relaxed);
    });
    rates.push_back(static_cast<double>(words * sizeof(uint64_t)) / seconds_since(start) / 1e9);
  }
  if (sink.load() == 42) std::printf(" ");  // keeps the sums alive
  return median(rates);
}

int large_repeats(const Options& options) { return std::max(1, options.repeats - 1); }

struct PhaseTimes {
  std::vector<double> prefill;  // seconds per run
  std::vector<double> decode;
};

// One prefill + decode run through the policy's runner, as generate() does it.
// after_prefill, if given, runs between the two phases, outside their timings.
void rollout_once(policy::Policy& policy, const std::vector<int32_t>& prompts, int batch, int new_tokens,
                  PhaseTimes* times, const std::function<void()>& after_prefill = nullptr) {
  Backend& backend = policy.context().backend();
  const model::ModelConfig& config = policy.config();
  const int64_t slot_rows = kPromptLength + new_tokens;
  policy::KvCache cache(backend, policy.compiled(), model::kv_dim(config), batch * slot_rows);
  policy::PassLimits limits;
  limits.max_tokens = rollout::SamplingOptions{}.max_tokens_per_step;

  const size_t n = static_cast<size_t>(batch);
  DeviceArray<SamplingRow> params(backend, n);
  DeviceArray<int32_t> tokens(backend, n);
  DeviceArray<float> logprobs(backend, n);
  std::vector<SamplingRow> rows(n);
  for (SamplingRow& row : rows) row.temperature = 0.0f;  // greedy
  params.upload(rows.data(), n);
  std::vector<int32_t> next(n);
  auto sample = [&](int64_t first, int64_t count, const float* logits) {
    backend.sample(logits, count, config.vocab_size, params.data(), tokens.data() + first, logprobs.data() + first);
  };

  policy::TokenBatch step;
  for (int b = 0; b < batch; ++b) {
    for (int p = 0; p < kPromptLength; ++p) {
      step.add(prompts[static_cast<size_t>(b * kPromptLength + p)], p, b * slot_rows, p == kPromptLength - 1);
    }
  }
  Clock::time_point start = Clock::now();
  policy.runner().run(policy.compiled(), policy.attention_scales(), step, cache, limits, sample);
  tokens.download(next.data(), n);
  const double prefill = seconds_since(start);
  if (after_prefill) after_prefill();

  start = Clock::now();
  for (int t = 0; t < new_tokens; ++t) {
    step.clear();
    for (int b = 0; b < batch; ++b) step.add(next[static_cast<size_t>(b)], kPromptLength + t, b * slot_rows, true);
    policy.runner().run(policy.compiled(), policy.attention_scales(), step, cache, limits, sample);
    tokens.download(next.data(), n);
  }
  const double decode = seconds_since(start);
  if (times != nullptr) {
    times->prefill.push_back(prefill);
    times->decode.push_back(decode);
  }
}

struct Measured {
  double prefill_tps = 0;
  double decode_tps = 0;
};

Measured measure(policy::Policy& policy, int batch, int new_tokens, int repeats, bool warmup) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(policy.config().vocab_size) - 1);
  std::vector<int32_t> prompts(static_cast<size_t>(batch * kPromptLength));
  for (int32_t& t : prompts) t = token(rng);
  if (warmup) rollout_once(policy, prompts, batch, std::min(new_tokens, 4), nullptr);
  PhaseTimes times;
  for (int r = 0; r < repeats; ++r) rollout_once(policy, prompts, batch, new_tokens, &times);
  return Measured{batch * kPromptLength / median(times.prefill), batch * new_tokens / median(times.decode)};
}

// Time of generate() for one 128-token prompt and `new_tokens` completion tokens.
double generate_seconds(policy::Policy& policy, int new_tokens) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(policy.config().vocab_size) - 1);
  std::vector<int32_t> prompt(kPromptLength);
  for (int32_t& t : prompt) t = token(rng);
  const std::vector<int64_t> offsets = {0, kPromptLength};
  rollout::TokenSequences prompts{prompt.data(), offsets.data(), 1};
  rollout::SamplingOptions sampling;
  sampling.temperature = 0.0f;
  sampling.max_new_tokens = new_tokens;
  sampling.stop_at_eos = false;
  const Clock::time_point start = Clock::now();
  const std::vector<rollout::Rollout> out = rollout::generate(policy, prompts, {1}, sampling);
  const double seconds = seconds_since(start);
  if (out[0].tokens.size() != static_cast<size_t>(new_tokens)) std::printf("(generate stopped early) ");
  return seconds;
}

// PyTorch results: (dtype, batch) -> tokens/s per phase; empty when unavailable.
struct TorchResult {
  std::string dtype;
  int batch;
  double prefill_tps, decode_tps;
};

std::vector<TorchResult> run_torch_baseline(const Options& options, int threads, std::string* note) {
  std::vector<TorchResult> results;
  if (!options.torch) {
    *note = "PyTorch baseline: skipped (--no-torch)";
    return results;
  }
  // GNU OpenMP's intra-op workers spin for a long time after each parallel
  // region and then fight OpenBLAS's own threads for the cores; a short spin
  // is torch's best setting on this Debian build (measured: prefill 25 ->
  // 440 tokens/s at batch 1 on 2 cores). Unless the caller chose otherwise.
  std::string command = "GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000} '" + options.torch_python + "' '" +
                        FP8RL_TORCH_BASELINE_SCRIPT + "' --threads " + std::to_string(threads) + " --new-tokens " +
                        std::to_string(options.new_tokens) + " --repeats " + std::to_string(options.repeats) +
                        " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  if (pipe != nullptr) {
    char buffer[4096];
    size_t got;
    while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
    pclose(pipe);
  }
  try {
    const size_t line = output.find_last_of('{', output.rfind("\"available\""));
    const io::Json doc = io::parse_json(line == std::string::npos ? output : output.substr(line), "torch baseline");
    if (!doc.at("available").as_bool()) {
      *note = "PyTorch baseline: unavailable (" + doc.at("reason").as_string() + ")";
      return results;
    }
    for (const io::Json& r : doc.at("results").elements()) {
      results.push_back(TorchResult{r.at("dtype").as_string(), static_cast<int>(r.at("batch").as_int64()),
                                    r.at("prefill_tokens_per_s").as_double(), r.at("decode_tokens_per_s").as_double()});
    }
    *note = "PyTorch baseline: torch " + doc.at("torch_version").as_string() + " (" + options.torch_python +
            "), plain eager model with a KV cache, fused qkv and gate/up, " +
            std::to_string(doc.at("threads").as_int64()) + " threads, GOMP_SPINCOUNT=1000";
  } catch (const std::exception&) {
    *note = "PyTorch baseline: unavailable (" + options.torch_python + " could not run " + FP8RL_TORCH_BASELINE_SCRIPT +
            ")";
    results.clear();
  }
  return results;
}

const TorchResult* find_torch(const std::vector<TorchResult>& results, const char* dtype, int batch) {
  for (const TorchResult& r : results) {
    if (r.dtype == dtype && r.batch == batch) return &r;
  }
  return nullptr;
}

struct RecipeRun {
  const char* name;
  policy::Recipe recipe;
  int64_t weight_bytes = 0;
  Measured batch1, batch32;
};

// The per-operation breakdown of batch-1 prefill (--profile only) and decode
// for the BF16 and FP8 recipes. Its own context, whose CPU backend the
// profiler wraps, so that the runs measured above are not wrapped; one
// warm-up run per recipe, then one profiled run, whose wall time is split at
// the phase boundary: its buffers' set-up and release, whose calls are
// counted, are then timed too.
void print_op_profiles(const Options& options, int threads, const std::vector<RecipeRun>& runs) {
  const int new_tokens = options.profile ? options.new_tokens : std::min(options.new_tokens, 16);
  auto backend = std::make_unique<bench::ProfilingBackend>(make_cpu_backend(threads), threads);
  bench::ProfilingBackend& profiler = *backend;
  Context context(std::move(backend), Logger(), threads);
  policy::Policy policy(context, model::random_model_params(smollm2_135m(), /*seed=*/7), runs[0].recipe);
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(policy.config().vocab_size) - 1);
  std::vector<int32_t> prompt(kPromptLength);
  for (int32_t& t : prompt) t = token(rng);

  std::printf("\nwhere the time goes per backend operation (batch 1, %d threads):\n", threads);
  for (const RecipeRun& run : {runs[0], runs[1]}) {
    policy.set_recipe(run.recipe);
    rollout_once(policy, prompt, 1, std::min(new_tokens, 4), nullptr);
    profiler.reset();
    Clock::time_point start = Clock::now();
    rollout_once(policy, prompt, 1, new_tokens, nullptr, [&] {
      const std::string title = std::string(run.name) + " prefill of " + std::to_string(kPromptLength) + " tokens";
      if (options.profile) profiler.print_table(stdout, title.c_str(), seconds_since(start));
      profiler.reset();
      start = Clock::now();
    });
    const std::string title = std::string(run.name) + " decode of " + std::to_string(new_tokens) + " tokens";
    profiler.print_table(stdout, title.c_str(), seconds_since(start));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  const Clock::time_point bench_start = Clock::now();
  BackendRequest request;
  request.choice = BackendChoice::cpu;
  request.num_threads = options.threads;
  Context context(request, Logger());
  const int threads = context.num_threads();

  std::printf(
      "fp8rl rollout benchmark: SmolLM2-135M shapes (llama, vocab 49152, hidden 576, 30 layers, 9/3 heads,\n"
      "head_dim 64, intermediate 1536, tied), random weights; prompts of %d tokens, %d new tokens (greedy)\n",
      kPromptLength, options.new_tokens);
  std::printf("machine: %s; %u hardware threads\n", context.description().c_str(), std::thread::hardware_concurrency());

  const size_t bandwidth_bytes = options.quick ? (size_t{256} << 20) : (size_t{1} << 30);
  const double bandwidth = memory_bandwidth_gbs(threads, bandwidth_bytes, options.quick ? 3 : 5);
  std::printf("memory bandwidth: %.1f GB/s (streaming read of %zu MiB, %d threads, median)\n", bandwidth,
              bandwidth_bytes >> 20, threads);
  std::fflush(stdout);

  std::vector<RecipeRun> runs(4);
  runs[0].name = "BF16";
  runs[1].name = "FP8";
  runs[1].recipe.linear = policy::Precision::fp8;
  runs[2].name = "FP8+KV+attn";
  runs[2].recipe = runs[1].recipe;
  runs[2].recipe.kv_cache = policy::Precision::fp8;
  runs[2].recipe.attention = policy::Precision::fp8;
  // The head too (a recipe option, off by default): what llama.cpp's Q8_0 files quantize.
  runs[3].name = "FP8+head";
  runs[3].recipe = runs[1].recipe;
  runs[3].recipe.head = policy::Precision::fp8;

  policy::Policy policy(context, model::random_model_params(smollm2_135m(), /*seed=*/7), runs[0].recipe);
  double generate_check = 0, loop_check = 0;
  for (RecipeRun& run : runs) {
    policy.set_recipe(run.recipe);
    run.weight_bytes = policy.compiled().weight_bytes_per_token();
    run.batch1 = measure(policy, 1, options.new_tokens, options.repeats, true);
    // Batch 32 (~25 s a run on 2 cores): no warm-up (batch 1 warmed up) and one run fewer.
    if (!options.batch1_only) {
      run.batch32 = measure(policy, 32, options.new_tokens, large_repeats(options), options.quick);
    }
    std::fprintf(stderr, "[bench_rollout] %s done at %.0f s\n", run.name, seconds_since(bench_start));
    if (&run == &runs[0]) {
      // Cross-check: the loop's batch-1 prefill + decode time vs generate() for the same work.
      loop_check = kPromptLength / run.batch1.prefill_tps + options.new_tokens / run.batch1.decode_tps;
      generate_seconds(policy, options.new_tokens + 1);
      generate_check = generate_seconds(policy, options.new_tokens + 1);
    }
  }

  std::string torch_note;
  const std::vector<TorchResult> torch = run_torch_baseline(options, threads, &torch_note);

  std::printf("\n%-8s %5s %-12s %12s %14s %7s\n", "phase", "batch", "recipe", "tokens/s", "PyTorch fp32", "ratio");
  for (int phase = 0; phase < 2; ++phase) {
    for (int batch : {1, 32}) {
      if (batch == 32 && options.batch1_only) continue;
      for (const RecipeRun& run : runs) {
        const Measured& m = batch == 1 ? run.batch1 : run.batch32;
        const double ours = phase == 0 ? m.prefill_tps : m.decode_tps;
        const TorchResult* t = find_torch(torch, "float32", batch);
        const double theirs = t == nullptr ? 0 : (phase == 0 ? t->prefill_tps : t->decode_tps);
        if (theirs > 0) {
          std::printf("%-8s %5d %-12s %12.1f %14.1f %6.2fx\n", phase == 0 ? "prefill" : "decode", batch, run.name, ours,
                      theirs, ours / theirs);
        } else {
          std::printf("%-8s %5d %-12s %12.1f %14s %7s\n", phase == 0 ? "prefill" : "decode", batch, run.name, ours, "-",
                      "-");
        }
      }
    }
  }
  for (const TorchResult& t : torch) {
    if (t.dtype != "float32") {
      std::printf("PyTorch %s batch %d: prefill %.1f, decode %.1f tokens/s\n", t.dtype.c_str(), t.batch, t.prefill_tps,
                  t.decode_tps);
    }
  }
  std::printf("%s\n", torch_note.c_str());

  std::printf("\ndecode at batch 1 vs memory bandwidth (%.1f GB/s):\n", bandwidth);
  for (const RecipeRun& run : runs) {
    const double achieved = static_cast<double>(run.weight_bytes) * run.batch1.decode_tps / 1e9;
    std::printf("  %-12s weights %7.1f MB/token x %6.1f tokens/s = %6.1f GB/s = %3.0f%% of bandwidth\n", run.name,
                static_cast<double>(run.weight_bytes) / 1e6, run.batch1.decode_tps, achieved,
                100.0 * achieved / bandwidth);
  }
  for (size_t i = 1; i < runs.size(); ++i) {
    std::printf("  %s / BF16 decode speed-up at batch 1: %.2fx (weight-byte ratio %.2fx)\n", runs[i].name,
                runs[i].batch1.decode_tps / runs[0].batch1.decode_tps,
                static_cast<double>(runs[0].weight_bytes) / static_cast<double>(runs[i].weight_bytes));
  }
  std::printf(
      "\nmethod: prefill = one pass over batch x %d prompt tokens + sampling of the first token; decode = %d\n"
      "steps of one token per sequence (forward + greedy sampling, tokens fed back), timed apart through\n"
      "the policy's ModelRunner as generate() drives it; medians of %d runs (batch 32: %d). Check: BF16\n"
      "generate() of 1 prompt x %d tokens took %.3f s vs %.3f s for the loop's prefill + decode.\n"
      "Weight bytes per token: CompiledModel::weight_bytes_per_token() (linear layers, head, norms).\n"
      "total benchmark time %.0f s\n",
      kPromptLength, options.new_tokens, options.repeats, large_repeats(options), options.new_tokens + 1,
      generate_check, loop_check, seconds_since(bench_start));
  print_op_profiles(options, threads, runs);
  return 0;
}
