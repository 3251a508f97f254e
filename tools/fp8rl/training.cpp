#include "training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "attention_scales.h"
#include "batches.h"
#include "checkpoint.h"
#include "cli_error.h"
#include "dataset.h"
#include "evaluation.h"
#include "generation.h"
#include "handles.h"
#include "hf_tokenizer.h"
#include "metrics_log.h"
#include "model_setup.h"
#include "task_source.h"
#include "text_task.h"
#include "world.h"

namespace fp8rl_cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Separates the SFT and GRPO prompt streams of one seed.
constexpr uint64_t kSftStream = 1;
constexpr uint64_t kGrpoStream = 2;

fp8rl_importance_mode importance_mode(const std::string& name) {
  if (name == "off") return FP8RL_IMPORTANCE_OFF;
  if (name == "plain") return FP8RL_IMPORTANCE_PLAIN;
  if (name == "truncated") return FP8RL_IMPORTANCE_TRUNCATED;
  if (name == "masked") return FP8RL_IMPORTANCE_TOKEN_MASKED;
  if (name == "sequence-masked") return FP8RL_IMPORTANCE_SEQUENCE_MASKED;
  throw UsageError("unknown importance mode '" + name + "'");
}

// Everything alive during one run, destroyed in reverse order (trainers are
// locals of run_training, so they go before the policies).
struct Run {
  Run(const TrainConfig& c, ProgressSink* s) : config(c), sink(s), context(c.threads) {}
  const TrainConfig& config;
  ProgressSink* sink;
  std::unique_ptr<TaskSource> source;  // the built-in task or the text dataset
  int max_new_tokens = 0;
  int64_t micro_batch_tokens = 0;
  Context context;
  Policy learner;                  // the trained policy
  Policy generator;                // generates_apart recipes only: an FP8 copy that generates
  AttentionScaleSet stale_scales;  // --stale-scales: the generator's scales when GRPO began
  const Policy& sampler() const { return generator.get() != nullptr ? generator : learner; }
  void say(const std::string& text) const {
    if (sink != nullptr) sink->on_message(text);
  }
};

// A built-in character task, or the text dataset of --data under the --init-from folder's tokenizer.
std::unique_ptr<TaskSource> make_task_source(const TrainConfig& c, const std::function<void(const std::string&)>& say) {
  if (c.text.train.empty()) return make_builtin_source(c);
  TextTaskOptions o = c.text;
  o.folder = c.init_from;
  o.val_size = c.val_size;
  return make_text_source(o, say);
}

void build_policies(Run& run) {
  const TrainConfig& c = run.config;
  fp8rl_model_config config;
  if (!c.sft_from.empty()) {  // the SFT end of a finished SFT-only run
    const RunPaths sft(c.sft_from);
    run.learner = load_policy(run.context, sft.model);
    set_attention_scales(run.learner, read_attention_scales(sft.attention_scales));
    config = policy_config(run.learner);
  } else if (c.init_from.empty()) {
    config = builtin_config(c.shape, run.source->builtin_vocab_size());
    run.learner = create_random_policy(run.context, config, c.seed);
  } else {
    run.learner = load_policy(run.context, c.init_from);
    config = policy_config(run.learner);
    run.source->check_vocabulary(config, c.init_from);
  }
  set_recipe(run.learner, learner_recipe(c.recipe));
  if (generates_apart(c.recipe)) {
    run.generator = create_random_policy(run.context, config, c.seed);
    set_recipe(run.generator, generator_recipe(c.recipe));
    check(fp8rl_policy_copy_weights(run.generator.get(), run.learner.get()), "fp8rl_policy_copy_weights");
  }
}

// Data-parallel ranks hold their own shard of the master weights after a
// step; gathering them makes the policy's weights whole (a no-op on one rank).
void gather_weights(fp8rl_trainer* trainer) {
  check(fp8rl_trainer_gather_weights(trainer), "fp8rl_trainer_gather_weights");
}

// Copying the weights also copies the learner's freshly calibrated
// attention scales; a stale generator puts its old ones back.
void sync_generator(const Run& run, fp8rl_trainer* trainer) {
  if (run.generator.get() == nullptr) return;
  gather_weights(trainer);
  check(fp8rl_policy_copy_weights(run.generator.get(), run.learner.get()), "fp8rl_policy_copy_weights");
  if (!run.stale_scales.q.empty()) set_attention_scales(run.generator, run.stale_scales);
}

// --stale-scales with a separate generator: the scales it holds when GRPO
// begins, kept in the run folder so that a resumed run generates with the
// same ones. (With one policy its trainer keeps them: grpo_options.)
void freeze_scales(Run& run, int64_t done) {
  if (!run.config.stale_scales || run.generator.get() == nullptr) return;
  const std::string path = run.config.out_dir.empty() ? "" : RunPaths(run.config.out_dir).stale_scales;
  if (done > 0) {
    run.stale_scales = read_attention_scales(path);
  } else {
    run.stale_scales = get_attention_scales(run.generator);
    if (!path.empty() && world().leader()) write_attention_scales(path, run.stale_scales);
  }
  set_attention_scales(run.generator, run.stale_scales);
}

fp8rl_trainer_options base_options(const Run& run) {
  fp8rl_trainer_options o;
  check(fp8rl_trainer_options_init(&o), "fp8rl_trainer_options_init");
  o.micro_batch_tokens = run.micro_batch_tokens;  // one micro-batch: no recomputation for tiny models
  o.seed = run.config.seed;
  o.weight_decay = 0.0;
  return o;
}

fp8rl_trainer_options sft_options(const Run& run) {
  fp8rl_trainer_options o = base_options(run);
  o.loss = FP8RL_LOSS_CROSS_ENTROPY;
  o.learning_rate = run.config.sft_lr;
  return o;
}

fp8rl_trainer_options grpo_options(const Run& run) {
  const TrainConfig& c = run.config;
  fp8rl_trainer_options o = base_options(run);
  o.loss = FP8RL_LOSS_CLIPPED_POLICY_GRADIENT;
  o.learning_rate = c.lr;
  o.group_size = c.group_size;
  o.normalize_by_std = c.normalize_by_std ? 1 : 0;
  o.importance.mode = importance_mode(c.importance);
  o.importance.high = c.is_cap;
  o.temperature = static_cast<float>(c.temperature);
  o.minibatches = c.minibatches;
  o.routing_replay = c.routing_replay ? 1 : 0;
  o.router_aux_loss_coef = c.router_aux_coef;
  // One policy generates and learns: its own scales stay as GRPO found them.
  o.freeze_attention_scales = c.stale_scales && !generates_apart(c.recipe) ? 1 : 0;
  return o;
}

StepRecord to_record(const char* phase, int64_t step, const fp8rl_train_metrics& m) {
  StepRecord r;
  r.phase = phase;
  r.step = step;
  r.loss = m.loss;
  r.reward_mean = m.reward_mean;
  r.grad_norm = m.grad_norm;
  r.clip_fraction = m.clip_fraction;
  r.ratio_max = m.ratio_max;
  r.old_policy_kl = m.old_policy_kl;
  r.entropy = m.entropy;
  if (m.routing_choices > 0) r.routing_agreement = m.routing_agreement;
  r.router_aux_loss = m.router_aux_loss;
  if (m.has_mismatch) {
    r.token_mult_prob_error = m.token_mult_prob_error;
    r.gen_kl_error = m.gen_kl_error;
    r.is_weight_mean = m.is_weight_mean;
  }
  r.tokens_per_second = m.tokens_per_second;
  r.generation_seconds = m.generation_seconds;
  r.recompute_seconds = m.recompute_seconds;
  r.train_seconds = m.train_seconds;
  r.recalibration_seconds = m.recalibration_seconds;
  r.recalibration_fraction = m.recalibration_fraction;
  r.skipped = m.skipped != 0;
  r.bytes_reduced = m.bytes_reduced;
  r.bytes_gathered = m.bytes_gathered;
  r.communication_seconds = m.communication_seconds;
  return r;
}

fp8rl_train_metrics train_step(fp8rl_trainer* trainer, const BatchData& data) {
  fp8rl_train_metrics metrics;
  check(fp8rl_train_metrics_init(&metrics), "fp8rl_train_metrics_init");
  const fp8rl_train_batch batch = data.view();
  check(fp8rl_trainer_step(trainer, &batch, &metrics), "fp8rl_trainer_step");
  return metrics;
}

// One GRPO iteration: options.minibatches optimizer steps on the rollouts.
fp8rl_train_metrics train_iteration(fp8rl_trainer* trainer, const BatchData& data) {
  fp8rl_train_metrics metrics;
  check(fp8rl_train_metrics_init(&metrics), "fp8rl_train_metrics_init");
  const fp8rl_train_batch batch = data.view();
  check(fp8rl_trainer_iterate(trainer, &batch, &metrics, nullptr, 0), "fp8rl_trainer_iterate");
  return metrics;
}

StepRecord sft_step(const Run& run, fp8rl_trainer* trainer, int64_t step) {
  const auto start = Clock::now();
  const std::vector<Problem> problems =
      rank_share(run.source->training_problems(run.config.seed, kSftStream, step, run.config.sft_batch));
  StepRecord record = to_record("sft", step, train_step(trainer, sft_batch(*run.source, problems)));
  sync_generator(run, trainer);
  record.step_seconds = seconds_since(start);
  return record;
}

StepRecord grpo_step(const Run& run, fp8rl_trainer* trainer, int64_t step) {
  const auto start = Clock::now();
  const TrainConfig& c = run.config;
  // Each rank takes whole groups of the step's prompts; the trainer's seed
  // stream is global, so the ranks' rollouts together are one process's.
  const std::vector<Problem> problems =
      rank_share(run.source->training_problems(c.seed, kGrpoStream, step, c.prompts_per_step));
  const PromptBatch prompts = make_prompt_batch(*run.source, problems, c.group_size);
  // Rollout seeds come from the trainer's seed stream, which its saved state carries.
  std::vector<uint64_t> seeds(static_cast<size_t>(prompts.count()));
  check(fp8rl_trainer_next_seeds(trainer, prompts.count(), seeds.data()), "fp8rl_trainer_next_seeds");
  fp8rl_sampling_options sampling =
      task_sampling(static_cast<float>(c.temperature), run.max_new_tokens, run.source->stop_tokens());
  sampling.record_experts = 1;  // Mixture-of-Experts policies: routing_agreement and replay; dense: nothing

  const Generated generated = generate(run.sampler(), prompts, seeds, sampling);
  StepRecord record =
      to_record("grpo", step, train_iteration(trainer, grpo_batch(*run.source, problems, c.group_size, generated)));
  sync_generator(run, trainer);
  record.step_seconds = seconds_since(start);
  return record;
}

double evaluate(const Run& run) {
  return validation_accuracy(run.sampler(), *run.source, run.source->validation_problems(), run.max_new_tokens);
}

void add_val(RunResult& result, int64_t grpo_step, double acc) {
  result.val_curve.emplace_back(grpo_step, acc);
  result.final_val_acc = acc;
  result.best_val_acc = std::isnan(result.best_val_acc) ? acc : std::max(result.best_val_acc, acc);
}

// Rebuilds the result of the steps a resumed run does not redo.
void restore_result(RunResult& result, const std::vector<StepRecord>& kept, const Progress& progress) {
  result.steps = kept;
  result.sft_end_val_acc = progress.sft_end_val_acc;
  add_val(result, 0, progress.sft_end_val_acc);
  for (const StepRecord& r : kept) {
    if (r.phase == "grpo" && r.has_val()) add_val(result, r.step, r.val_acc);
  }
}

void save_checkpoint(const Run& run, fp8rl_trainer* trainer, int64_t grpo_step, const RunResult& result) {
  if (run.config.out_dir.empty()) return;
  const RunPaths paths(run.config.out_dir);
  check(fp8rl_trainer_save_state(trainer, paths.state.c_str()), "fp8rl_trainer_save_state");  // every rank
  if (world().leader()) write_progress(paths, Progress{grpo_step, result.sft_end_val_acc});
}

void validate_config(const TrainConfig& c) {
  if (c.out_dir.empty() && c.resume) throw UsageError("--resume needs --out");
  if (c.group_size < 2) throw UsageError("--group-size must be at least 2 (GRPO compares completions)");
  const int ranks = world().size();
  if (c.prompts_per_step < ranks || (c.sft_steps > 0 && c.sft_batch < ranks))
    throw UsageError("--prompts-per-step and --sft-batch must be at least the number of ranks (" +
                     std::to_string(ranks) + "): each rank trains on whole groups of its own");
  if (c.stale_scales && generator_recipe(c.recipe).kv_cache != FP8RL_PRECISION_FP8)
    throw UsageError(
        "--stale-scales needs a recipe that generates with an FP8 KV cache (fp8-kv, fp8-gen), whose "
        "attention scales can go stale; '" +
        c.recipe + "' has none");
  const int fewest_completions = c.prompts_per_step / ranks * c.group_size;  // on the rank with the fewest prompts
  if (c.minibatches > fewest_completions)
    throw UsageError("--minibatches must be at most the completions per step of each rank (" +
                     std::to_string(fewest_completions) + ")");
}

// sft_from: the SFT records of the finished SFT-only run whose final policy
// build_policies loaded; only the SFT end's validation runs again, in this
// run's recipe, as run_sft measures it.
void replay_sft(const Run& run, RunResult& result, MetricsLog& log) {
  const int64_t total = run.config.sft_steps;
  const std::string path = RunPaths(run.config.sft_from).metrics;
  std::vector<StepRecord> records = read_metrics(path, total);
  if (static_cast<int64_t>(records.size()) != total ||
      std::any_of(records.begin(), records.end(), [](const StepRecord& r) { return r.phase != "sft"; }))
    throw LibraryError(path + " does not hold the " + std::to_string(total) + " SFT steps this run replays");
  if (run.sink != nullptr) run.sink->on_phase("sft", total);
  records.back().val_acc = evaluate(run);
  for (const StepRecord& record : records) {
    log.append(record);
    result.steps.push_back(record);
    if (run.sink != nullptr) run.sink->on_step(record, total);
  }
}

void run_sft(const Run& run, RunResult& result, MetricsLog& log) {
  const int64_t total = run.config.sft_steps;
  if (total == 0) return;
  if (!run.config.sft_from.empty()) return replay_sft(run, result, log);
  if (run.sink != nullptr) run.sink->on_phase("sft", total);
  const TrainConfig& c = run.config;
  const bool switch_recipe = !c.sft_recipe.empty() && c.sft_recipe != c.recipe;
  if (switch_recipe) set_recipe(run.learner, learner_recipe(c.sft_recipe));
  Trainer trainer(run.learner.get(), sft_options(run));
  for (int64_t step = 1; step <= total; ++step) {
    StepRecord record = sft_step(run, trainer.get(), step);
    if (step == total) {
      gather_weights(trainer.get());  // the GRPO trainer starts from the whole weights
      // The SFT end is measured as GRPO will start from it: in GRPO's recipe.
      if (switch_recipe) set_recipe(run.learner, learner_recipe(c.recipe));
      record.val_acc = evaluate(run);
    }
    log.append(record);
    result.steps.push_back(record);
    if (run.sink != nullptr) run.sink->on_step(record, total);
  }
}

void run_grpo(Run& run, RunResult& result, MetricsLog& log, int64_t done) {
  const TrainConfig& c = run.config;
  if (run.sink != nullptr) run.sink->on_phase("grpo", c.steps);
  Trainer trainer(run.learner.get(), grpo_options(run));
  if (done > 0) {
    // The state holds the master weights, moments, seed stream and scales of step `done`.
    check(fp8rl_trainer_load_state(trainer.get(), RunPaths(c.out_dir).state.c_str()), "fp8rl_trainer_load_state");
    sync_generator(run, trainer.get());
  }
  freeze_scales(run, done);
  for (int64_t step = done + 1; step <= c.steps; ++step) {
    StepRecord record = grpo_step(run, trainer.get(), step);
    if (step % c.eval_every == 0 || step == c.steps) {
      record.val_acc = evaluate(run);
      add_val(result, step, record.val_acc);
    }
    log.append(record);
    result.steps.push_back(record);
    if (run.sink != nullptr) run.sink->on_step(record, c.steps);
    if (step % c.save_every == 0 || step == c.steps) save_checkpoint(run, trainer.get(), step, result);
  }
  if (done > 0 && done == c.steps) run.say("the checkpoint is already at step " + std::to_string(done));
  gather_weights(trainer.get());  // the final policy is saved from the whole weights
}

}  // namespace

RunResult run_training(const TrainConfig& config, ProgressSink* sink) {
  validate_config(config);
  const auto start = Clock::now();
  Run run(config, sink);
  run.source = make_task_source(config, [&run](const std::string& text) { run.say(text); });
  run.max_new_tokens = config.max_new_tokens > 0 ? config.max_new_tokens : run.source->default_max_new_tokens();
  const int64_t longest = run.source->longest_sequence(run.max_new_tokens);
  run.micro_batch_tokens =
      std::max<int64_t>(2048, longest * std::max(config.sft_batch, config.prompts_per_step * config.group_size));
  build_policies(run);
  const int64_t positions = policy_config(run.learner).max_position_embeddings;
  if (longest > positions)
    throw UsageError("a sequence (BOS, prompt and up to " + std::to_string(run.max_new_tokens) +
                     " new tokens) can take " + std::to_string(longest) + " positions, but the model has " +
                     std::to_string(positions) + ": give --max-positions " + std::to_string(longest) +
                     " or more (built-in model) or fewer --max-new-tokens");

  RunResult result;
  Progress progress;
  std::vector<StepRecord> kept;
  if (!config.out_dir.empty()) {
    create_run_folders(config.out_dir);
    if (config.resume) progress = read_progress(RunPaths(config.out_dir));
    if (progress.grpo_step >= 0) {
      kept = read_metrics(RunPaths(config.out_dir).metrics, config.sft_steps + progress.grpo_step);
      restore_result(result, kept, progress);
      run.say("resuming from GRPO step " + std::to_string(progress.grpo_step));
    } else if (config.resume) {
      run.say("no checkpoint in " + config.out_dir + ": starting from the beginning");
    }
  }
  MetricsLog log;
  if (!config.out_dir.empty() && world().leader()) log.open(RunPaths(config.out_dir).metrics, kept);

  if (progress.grpo_step < 0) {
    run_sft(run, result, log);
    // Without SFT steps, the starting point is the initial policy.
    result.sft_end_val_acc = result.steps.empty() ? evaluate(run) : result.steps.back().val_acc;
    add_val(result, 0, result.sft_end_val_acc);
  }
  run_grpo(run, result, log, std::max<int64_t>(progress.grpo_step, 0));
  if (!config.out_dir.empty() && world().leader()) {
    // The trained policy as an HF folder, for `fp8rl generate --model` and `fp8rl export-fp8`.
    const RunPaths paths(config.out_dir);
    check(fp8rl_policy_save(run.learner.get(), paths.model.c_str(), FP8RL_DTYPE_F32), "fp8rl_policy_save");
    write_attention_scales(paths.attention_scales, get_attention_scales(run.learner));
    // Text runs: with the folder's tokenizer, `fp8rl generate --prompt` and `fp8rl eval` take it as it is.
    if (!config.text.train.empty()) HfTokenizer::copy_files(config.init_from, RunPaths(config.out_dir).model);
  }
  result.wall_seconds = seconds_since(start);
  return result;
}

}  // namespace fp8rl_cli
