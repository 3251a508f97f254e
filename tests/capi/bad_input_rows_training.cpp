// Rows of the bad-input table: mismatch metrics, trainers, training state
// files, conversion, quantization and the GEMMs.
#include <memory>
#include <tuple>

#include "capi/bad_input_table.h"

namespace capi_test::bad_input {

void mismatch_functions(Table& t, World& w) {
  Outs& o = w.outs;
  fp8rl_importance_options importance;
  REQUIRE(fp8rl_importance_options_init(&importance) == FP8RL_OK);
  importance.mode = FP8RL_IMPORTANCE_TRUNCATED;
  const std::vector<int64_t> offsets{0, 2, 4, 6, 8};
  const float* logp = w.logp_gen.data();
  const auto compute = [&o, logp, offsets](const fp8rl_importance_options& options) {
    return fp8rl_mismatch_metrics_compute(logp, logp, offsets.data(), 4, &options, &o.mismatch);
  };
  const std::string f = "fp8rl_mismatch_metrics_compute";
  t.invalid(f, "logp_old NULL", "logp_old", [&o, logp, offsets, importance] {
    return fp8rl_mismatch_metrics_compute(nullptr, logp, offsets.data(), 4, &importance, &o.mismatch);
  });
  t.invalid(f, "logp_gen NULL", "logp_gen", [&o, logp, offsets, importance] {
    return fp8rl_mismatch_metrics_compute(logp, nullptr, offsets.data(), 4, &importance, &o.mismatch);
  });
  t.invalid(f, "offsets NULL", "offsets", [&o, logp, importance] {
    return fp8rl_mismatch_metrics_compute(logp, logp, nullptr, 4, &importance, &o.mismatch);
  });
  for (const int64_t bad : {int64_t{0}, int64_t{-1}})
    t.invalid(f, "num_sequences " + std::to_string(bad), "num_sequences", [&o, logp, offsets, importance, bad] {
      return fp8rl_mismatch_metrics_compute(logp, logp, offsets.data(), bad, &importance, &o.mismatch);
    });
  t.invalid(f, "decreasing offsets", "offsets", [&o, logp, importance] {
    const int64_t bad[] = {0, 4, 2, 6, 8};
    return fp8rl_mismatch_metrics_compute(logp, logp, bad, 4, &importance, &o.mismatch);
  });
  t.invalid(f, "options NULL", "options", [&o, logp, offsets] {
    return fp8rl_mismatch_metrics_compute(logp, logp, offsets.data(), 4, nullptr, &o.mismatch);
  });
  t.invalid(f, "out NULL", "out_metrics", [logp, offsets, importance] {
    return fp8rl_mismatch_metrics_compute(logp, logp, offsets.data(), 4, &importance, nullptr);
  });
  t.struct_sizes<fp8rl_importance_options>(f, "options->struct_size", importance, compute);
  t.enums<fp8rl_importance_options>(f, "options->mode", importance, &fp8rl_importance_options::mode, compute);
  t.non_finite<fp8rl_importance_options>(f, "options->low", importance, &fp8rl_importance_options::low, compute);
  t.non_finite<fp8rl_importance_options>(f, "options->high", importance, &fp8rl_importance_options::high, compute);
  fp8rl_importance_options inverted = importance;
  inverted.low = 3.0;
  t.invalid(f, "low above high", "low", [compute, inverted] { return compute(inverted); });
}

namespace {

// A Mixture-of-Experts policy with a trainer and a replaying one, and a
// batch of its own rollouts with their recorded experts (4 sequences of 3 +
// 2 tokens: 4 fed tokens each, 2 sparse layers, k 2).
struct MoeWorld {
  CpuContext context{1};
  Policy policy{context.get(), moe_config()};
  fp8rl_trainer* trainer = nullptr;
  fp8rl_trainer* replaying = nullptr;
  std::vector<int32_t> tokens, experts;
  std::vector<int64_t> offsets{0}, prompt_lengths{3, 3, 3, 3};
  std::vector<float> logp_gen, rewards{1, 0, 1, 0};
  fp8rl_train_metrics metrics{};

  static fp8rl_model_config moe_config() {
    fp8rl_model_config c = rl_loop_config();
    c.family = FP8RL_MODEL_FAMILY_QWEN3_MOE;
    c.qk_norm = 1;
    c.num_experts = 4;
    c.num_experts_per_tok = 2;
    c.moe_intermediate_size = 8;
    return c;
  }
  MoeWorld() {
    fp8rl_trainer_options options = World::trainer_options();
    REQUIRE(fp8rl_trainer_create(policy.get(), &options, &trainer) == FP8RL_OK);
    options.routing_replay = 1;
    REQUIRE(fp8rl_trainer_create(policy.get(), &options, &replaying) == FP8RL_OK);
    fp8rl_sampling_options sampling = World::sampling_options();
    sampling.record_experts = 1;
    const std::vector<int32_t> prompts{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
    const std::vector<int64_t> prompt_offsets{0, 3, 6, 9, 12};
    const std::vector<uint64_t> seeds{1, 2, 3, 4};
    fp8rl_rollout* rollout = nullptr;
    REQUIRE(fp8rl_policy_generate(policy.get(), prompts.data(), prompt_offsets.data(), 4, seeds.data(), &sampling,
                                  &rollout) == FP8RL_OK);
    for (int64_t i = 0; i < 4; ++i) {
      const int32_t *completion = nullptr, *chosen = nullptr;
      const float* logprobs = nullptr;
      int64_t length = 0, positions = 0, layers = 0, k = 0;
      REQUIRE(fp8rl_rollout_get(rollout, i, &completion, &logprobs, &length, nullptr) == FP8RL_OK);
      REQUIRE(fp8rl_rollout_get_experts(rollout, i, &chosen, &positions, &layers, &k) == FP8RL_OK);
      tokens.insert(tokens.end(), prompts.begin() + 3 * i, prompts.begin() + 3 * (i + 1));
      tokens.insert(tokens.end(), completion, completion + length);
      logp_gen.insert(logp_gen.end(), logprobs, logprobs + length);
      experts.insert(experts.end(), chosen, chosen + positions * layers * k);
      offsets.push_back(static_cast<int64_t>(tokens.size()));
    }
    fp8rl_rollout_destroy(rollout);
    REQUIRE(experts.size() == 4 * 4 * 2 * 2);
    REQUIRE(fp8rl_train_metrics_init(&metrics) == FP8RL_OK);
  }
  ~MoeWorld() {
    fp8rl_trainer_destroy(replaying);
    fp8rl_trainer_destroy(trainer);
  }
  MoeWorld(const MoeWorld&) = delete;
  MoeWorld& operator=(const MoeWorld&) = delete;

  fp8rl_train_batch batch() const {
    fp8rl_train_batch b = World::four_sequence_batch(tokens, offsets, prompt_lengths, logp_gen, rewards);
    b.experts = experts.data();
    b.num_expert_choices = static_cast<int64_t>(experts.size());
    return b;
  }
};

// The expert records of a batch: their count, their values, and replay without them.
void moe_batch_rows(Table& t) {
  const auto m = std::make_shared<MoeWorld>();
  const auto spoil = [&t, m](const std::string& what, const std::string& names, bool replay,
                             const std::function<void(fp8rl_train_batch&, std::vector<int32_t>&)>& change) {
    const auto experts = std::make_shared<std::vector<int32_t>>(m->experts);
    fp8rl_train_batch b = m->batch();
    change(b, *experts);
    fp8rl_trainer* trainer = replay ? m->replaying : m->trainer;
    t.invalid("fp8rl_trainer_step", what, names, [m, b, experts, trainer] {
      return fp8rl_trainer_step(trainer, &b, &m->metrics);
    });
  };
  spoil("num_expert_choices 5", "num_expert_choices", false,
        [](fp8rl_train_batch& b, std::vector<int32_t>&) { b.num_expert_choices = 5; });
  spoil("an expert id 4 of 4", "experts[9]", false, [](fp8rl_train_batch& b, std::vector<int32_t>& e) {
    e[9] = 4;
    b.experts = e.data();
  });
  spoil("an expert named twice for one token", "not a distinct expert", false,
        [](fp8rl_train_batch& b, std::vector<int32_t>& e) {
          e[1] = e[0];
          b.experts = e.data();
        });
  spoil("routing replay without experts", "experts", true, [](fp8rl_train_batch& b, std::vector<int32_t>&) {
    b.experts = nullptr;
    b.num_expert_choices = 0;
  });
}

}  // namespace

void trainer_functions(Table& t, World& w) {
  moe_batch_rows(t);
  Outs& o = w.outs;
  fp8rl_policy* p = w.policy.get();
  fp8rl_trainer* tr = w.trainer;
  const fp8rl_trainer_options valid = World::trainer_options();

  // trainer_create: a second trainer of the same policy is allowed, so every row spoils one option.
  const std::string create = "fp8rl_trainer_create";
  const std::function<fp8rl_status(const fp8rl_trainer_options&)> make = [&o, p](const fp8rl_trainer_options& options) {
    return fp8rl_trainer_create(p, &options, &o.trainer);
  };
  t.invalid(create, "policy NULL", "policy", [&o, valid] { return fp8rl_trainer_create(nullptr, &valid, &o.trainer); });
  t.invalid(create, "options NULL", "options", [&o, p] { return fp8rl_trainer_create(p, nullptr, &o.trainer); });
  t.invalid(create, "out NULL", "out_trainer", [p, valid] { return fp8rl_trainer_create(p, &valid, nullptr); });
  t.struct_sizes(create, "options->struct_size", valid, make);
  t.enums(create, "options->loss", valid, &fp8rl_trainer_options::loss, make);
  t.enums(create, "options->kl_estimator", valid, &fp8rl_trainer_options::kl_estimator, make);
  t.enums(create, "options->aggregation", valid, &fp8rl_trainer_options::aggregation, make);
  t.enums(create, "options->baseline", valid, &fp8rl_trainer_options::baseline, make);
  t.enums(create, "options->schedule", valid, &fp8rl_trainer_options::schedule, make);
  for (const auto& [name, member] : std::vector<std::pair<std::string, double fp8rl_trainer_options::*>>{
           {"clip_low", &fp8rl_trainer_options::clip_low},
           {"clip_high", &fp8rl_trainer_options::clip_high},
           {"kl_coefficient", &fp8rl_trainer_options::kl_coefficient},
           {"advantage_epsilon", &fp8rl_trainer_options::advantage_epsilon},
           {"learning_rate", &fp8rl_trainer_options::learning_rate},
           {"min_lr_ratio", &fp8rl_trainer_options::min_lr_ratio},
           {"beta1", &fp8rl_trainer_options::beta1},
           {"beta2", &fp8rl_trainer_options::beta2},
           {"adam_epsilon", &fp8rl_trainer_options::adam_epsilon},
           {"weight_decay", &fp8rl_trainer_options::weight_decay},
           {"max_grad_norm", &fp8rl_trainer_options::max_grad_norm},
           {"router_aux_loss_coef", &fp8rl_trainer_options::router_aux_loss_coef}}) {
    t.non_finite(create, "options->" + name, valid, member, make);
    fp8rl_trainer_options negative = valid;
    negative.*member = -1.0;
    t.invalid(create, "options->" + name + " -1", name, [make, negative] { return make(negative); });
  }
  t.non_finite(create, "options->temperature", valid, &fp8rl_trainer_options::temperature, make);
  const auto spoiled = [&](const std::string& field, auto change) {
    fp8rl_trainer_options options = valid;
    change(options);
    t.invalid(create, field, bare(field.substr(0, field.find(' '))), [make, options] { return make(options); });
  };
  spoiled("options->group_size 0", [](fp8rl_trainer_options& o2) { o2.group_size = 0; });
  spoiled("options->group_size -1", [](fp8rl_trainer_options& o2) { o2.group_size = -1; });
  spoiled("options->micro_batch_tokens 0", [](fp8rl_trainer_options& o2) { o2.micro_batch_tokens = 0; });
  spoiled("options->minibatches 0", [](fp8rl_trainer_options& o2) { o2.minibatches = 0; });
  spoiled("options->minibatches -1", [](fp8rl_trainer_options& o2) { o2.minibatches = -1; });
  spoiled("options->warmup_steps -1", [](fp8rl_trainer_options& o2) { o2.warmup_steps = -1; });
  spoiled("options->total_steps -1", [](fp8rl_trainer_options& o2) { o2.total_steps = -1; });
  spoiled("options->temperature 0", [](fp8rl_trainer_options& o2) { o2.temperature = 0.0f; });
  spoiled("options->beta1 1", [](fp8rl_trainer_options& o2) { o2.beta1 = 1.0; });
  for (const bool importance : {true, false}) {
    fp8rl_trainer_options options = valid;
    (importance ? options.importance.struct_size : options.calibration.struct_size) = 0;
    const std::string field = importance ? "options->importance.struct_size" : "options->calibration.struct_size";
    t.add(create, field + " 0", FP8RL_ERROR_VERSION_MISMATCH, field, [make, options] { return make(options); });
  }
  for (const int32_t raw : kBadEnums)
    spoiled("options->importance.mode " + std::to_string(raw), [raw](fp8rl_trainer_options& o2) {
      std::memcpy(&o2.importance.mode, &raw, sizeof raw);
    });
  spoiled("options->calibration.percentile NaN",
          [](fp8rl_trainer_options& o2) { o2.calibration.percentile = kNaN64; });
  spoiled("options->importance.high Inf", [](fp8rl_trainer_options& o2) {
    o2.importance.mode = FP8RL_IMPORTANCE_TRUNCATED;
    o2.importance.high = kInf64;
  });

  t.invalid("fp8rl_trainer_memory", "trainer NULL", "trainer", [&o] { return fp8rl_trainer_memory(nullptr, &o.report); });
  t.invalid("fp8rl_trainer_memory", "out NULL", "out_report", [tr] { return fp8rl_trainer_memory(tr, nullptr); });

  // Steps and iterations: every row spoils the batch.
  const fp8rl_train_batch batch = w.batch();
  const std::function<fp8rl_status(const fp8rl_train_batch&)> step = [&o, tr](const fp8rl_train_batch& b) {
    return fp8rl_trainer_step(tr, &b, &o.metrics);
  };
  const std::string f = "fp8rl_trainer_step";
  t.invalid(f, "trainer NULL", "trainer", [&o, batch] { return fp8rl_trainer_step(nullptr, &batch, &o.metrics); });
  t.invalid(f, "batch NULL", "batch", [&o, tr] { return fp8rl_trainer_step(tr, nullptr, &o.metrics); });
  t.invalid(f, "out NULL", "out_metrics", [tr, batch] { return fp8rl_trainer_step(tr, &batch, nullptr); });
  t.struct_sizes(f, "batch->struct_size", batch, step);
  // A spoiled batch's arrays live in storage that the row owns.
  struct Spoiled {
    std::vector<int32_t> tokens;
    std::vector<int64_t> sizes;
    std::vector<float> values;
  };
  const auto spoil = [&](const std::string& what, const std::string& names,
                         const std::function<void(fp8rl_train_batch&, Spoiled&)>& change,
                         fp8rl_status expected = FP8RL_ERROR_INVALID_ARGUMENT) {
    const auto storage = std::make_shared<Spoiled>();
    fp8rl_train_batch b = batch;
    change(b, *storage);
    t.add(f, what, expected, names, [step, b, storage] { return step(b); });
    t.add("fp8rl_trainer_iterate", what, expected, names, [&o, tr, b, storage] {
      return fp8rl_trainer_iterate(tr, &b, &o.metrics, o.minibatches, 2);
    });
  };
  spoil("tokens NULL", "batch->tokens", [](fp8rl_train_batch& b, Spoiled&) { b.tokens = nullptr; });
  spoil("offsets NULL", "batch->offsets", [](fp8rl_train_batch& b, Spoiled&) { b.offsets = nullptr; });
  spoil("prompt_lengths NULL", "batch->prompt_lengths",
        [](fp8rl_train_batch& b, Spoiled&) { b.prompt_lengths = nullptr; });
  spoil("num_sequences 0", "num_sequences", [](fp8rl_train_batch& b, Spoiled&) { b.num_sequences = 0; });
  spoil("num_sequences -1", "num_sequences", [](fp8rl_train_batch& b, Spoiled&) { b.num_sequences = -1; });
  spoil("num_completion_tokens 7", "num_completion_tokens",
        [](fp8rl_train_batch& b, Spoiled&) { b.num_completion_tokens = 7; });
  spoil("num_completion_tokens -1", "num_completion_tokens",
        [](fp8rl_train_batch& b, Spoiled&) { b.num_completion_tokens = -1; });
  spoil("rewards and advantages both", "advantages",
        [&w](fp8rl_train_batch& b, Spoiled&) { b.advantages = w.rewards.data(); });
  spoil("neither rewards nor advantages", "rewards", [](fp8rl_train_batch& b, Spoiled&) { b.rewards = nullptr; });
  spoil("generation_seconds -1", "batch->generation_seconds",
        [](fp8rl_train_batch& b, Spoiled&) { b.generation_seconds = -1; });
  spoil("generation_seconds NaN", "batch->generation_seconds",
        [](fp8rl_train_batch& b, Spoiled&) { b.generation_seconds = kNaN64; });
  for (const int32_t bad : {int32_t{-1}, static_cast<int32_t>(w.config.vocab_size)})
    spoil("a token id " + std::to_string(bad), "token id", [&w, bad](fp8rl_train_batch& b, Spoiled& s) {
      s.tokens = w.tokens;
      s.tokens[4] = bad;
      b.tokens = s.tokens.data();
    });
  spoil("decreasing offsets", "offsets", [](fp8rl_train_batch& b, Spoiled& s) {
    s.sizes = {0, 10, 5, 15, 20};
    b.offsets = s.sizes.data();
  });
  spoil("a prompt length past its sequence", "prompt length 9", [](fp8rl_train_batch& b, Spoiled& s) {
    s.sizes = {3, 3, 9, 3};
    b.prompt_lengths = s.sizes.data();
  });
  spoil("no completion token", "completion", [](fp8rl_train_batch& b, Spoiled& s) {
    s.sizes = {5, 5, 5, 5};
    b.prompt_lengths = s.sizes.data();
    b.num_completion_tokens = 0;
  });
  for (const float bad : {kNaN, kInf, -kInf}) {
    const std::string text = std::to_string(bad);
    spoil(
        "a reward " + text, "rewards",
        [bad](fp8rl_train_batch& b, Spoiled& s) {
          s.values = {1, bad, 1, 0};
          b.rewards = s.values.data();
        },
        FP8RL_ERROR_NON_FINITE);
    spoil(
        "an advantage " + text, "advantages",
        [bad](fp8rl_train_batch& b, Spoiled& s) {
          s.values = {1, bad, 1, 0};
          b.rewards = nullptr;
          b.advantages = s.values.data();
        },
        FP8RL_ERROR_NON_FINITE);
    spoil(
        "a logp_old " + text, "logp_old",
        [&w, bad](fp8rl_train_batch& b, Spoiled& s) {
          s.values = w.logp_gen;
          s.values[3] = bad;
          b.logp_old = s.values.data();
        },
        FP8RL_ERROR_NON_FINITE);
  }
  t.invalid("fp8rl_trainer_iterate", "out_minibatches NULL with a capacity", "out_minibatches", [&o, tr, batch] {
    return fp8rl_trainer_iterate(tr, &batch, &o.metrics, nullptr, 2);
  });
  t.invalid("fp8rl_trainer_iterate", "capacity -1", "capacity", [&o, tr, batch] {
    return fp8rl_trainer_iterate(tr, &batch, &o.metrics, o.minibatches, -1);
  });
  t.invalid("fp8rl_trainer_iterate", "out_iteration NULL", "out_iteration", [&o, tr, batch] {
    return fp8rl_trainer_iterate(tr, &batch, nullptr, o.minibatches, 2);
  });
  t.add("fp8rl_trainer_step", "out_metrics->struct_size 0", FP8RL_ERROR_VERSION_MISMATCH, "out_metrics->struct_size",
        [&o, tr, batch] {
          o.metrics.struct_size = 0;
          const fp8rl_status status = fp8rl_trainer_step(tr, &batch, &o.metrics);
          o.metrics.struct_size = sizeof o.metrics;
          return status;
        });

  // Recompute, recalibrate, seeds.
  bad_sequences(t, "fp8rl_trainer_recompute_logprobs", w.tokens, w.offsets, w.config.vocab_size,
                [&o, &w, tr](const int32_t* tokens, const int64_t* offs, int64_t count) {
                  return fp8rl_trainer_recompute_logprobs(tr, tokens, offs, count, w.prompt_lengths.data(), o.logprobs,
                                                          8);
                });
  t.invalid("fp8rl_trainer_recompute_logprobs", "trainer NULL", "trainer", [&o, &w] {
    return fp8rl_trainer_recompute_logprobs(nullptr, w.tokens.data(), w.offsets.data(), 4, w.prompt_lengths.data(),
                                            o.logprobs, 8);
  });
  t.invalid("fp8rl_trainer_recompute_logprobs", "prompt_lengths NULL", "prompt_lengths", [&o, &w, tr] {
    return fp8rl_trainer_recompute_logprobs(tr, w.tokens.data(), w.offsets.data(), 4, nullptr, o.logprobs, 8);
  });
  t.invalid("fp8rl_trainer_recompute_logprobs", "capacity 7", "capacity", [&o, &w, tr] {
    return fp8rl_trainer_recompute_logprobs(tr, w.tokens.data(), w.offsets.data(), 4, w.prompt_lengths.data(),
                                            o.logprobs, 7);
  });
  t.invalid("fp8rl_trainer_recalibrate", "trainer NULL", "trainer",
            [&o] { return fp8rl_trainer_recalibrate(nullptr, &o.seconds); });
  t.invalid("fp8rl_trainer_next_seeds", "trainer NULL", "trainer",
            [&o] { return fp8rl_trainer_next_seeds(nullptr, 4, o.seeds); });
  t.invalid("fp8rl_trainer_next_seeds", "seeds NULL", "seeds", [tr] { return fp8rl_trainer_next_seeds(tr, 4, nullptr); });
  for (const int64_t count : {int64_t{-1}, kHugeCount})
    t.invalid("fp8rl_trainer_next_seeds", "count " + std::to_string(count), "count",
              [&o, tr, count] { return fp8rl_trainer_next_seeds(tr, count, o.seeds); });

  // Training state files.
  t.invalid("fp8rl_trainer_save_state", "trainer NULL", "trainer",
            [&w] { return fp8rl_trainer_save_state(nullptr, w.scratch.path("state").c_str()); });
  t.invalid("fp8rl_trainer_save_state", "path NULL", "path", [tr] { return fp8rl_trainer_save_state(tr, nullptr); });
  for (const Scratch::SpecialPath& special : w.scratch.unwritable_files())
    t.add("fp8rl_trainer_save_state", special.what, special.expected, special.names,
          [tr, path = special.path] { return fp8rl_trainer_save_state(tr, path.c_str()); });
  t.invalid("fp8rl_trainer_load_state", "trainer NULL", "trainer",
            [&w] { return fp8rl_trainer_load_state(nullptr, w.scratch.path("state").c_str()); });
  t.invalid("fp8rl_trainer_load_state", "path NULL", "path", [tr] { return fp8rl_trainer_load_state(tr, nullptr); });
  for (const Scratch::SpecialPath& special : w.scratch.unreadable_files())
    t.add("fp8rl_trainer_load_state", special.what, special.expected, special.names,
          [tr, path = special.path] { return fp8rl_trainer_load_state(tr, path.c_str()); });
}

void numerics_functions(Table& t, World& w) {
  Outs& o = w.outs;
  fp8rl_context* c = w.context.get();
  static const float kInput[256] = {1.0f, -2.0f, 3.5f};

  // fp8rl_convert(src, src_dtype, dst, dst_dtype, count, saturate).
  const std::string convert = "fp8rl_convert";
  t.invalid(convert, "src NULL", "src",
            [&o] { return fp8rl_convert(nullptr, FP8RL_DTYPE_F32, o.codes, FP8RL_DTYPE_E4M3, 4, 1); });
  t.invalid(convert, "dst NULL", "dst",
            [] { return fp8rl_convert(kInput, FP8RL_DTYPE_F32, nullptr, FP8RL_DTYPE_E4M3, 4, 1); });
  for (const int32_t raw : kBadEnums) {
    t.invalid(convert, "src_dtype " + std::to_string(raw), "src_dtype", [&o, raw] {
      fp8rl_dtype dtype;
      std::memcpy(&dtype, &raw, sizeof raw);
      return fp8rl_convert(kInput, dtype, o.codes, FP8RL_DTYPE_E4M3, 4, 1);
    });
    t.invalid(convert, "dst_dtype " + std::to_string(raw), "dst_dtype", [&o, raw] {
      fp8rl_dtype dtype;
      std::memcpy(&dtype, &raw, sizeof raw);
      return fp8rl_convert(kInput, FP8RL_DTYPE_F32, o.codes, dtype, 4, 1);
    });
  }
  t.invalid(convert, "count huge", "count", [&o] {
    return fp8rl_convert(kInput, FP8RL_DTYPE_F32, o.codes, FP8RL_DTYPE_E4M3, std::numeric_limits<size_t>::max(), 1);
  });

  // Quantization.
  fp8rl_quantize_options q;
  REQUIRE(fp8rl_quantize_options_init(&q) == FP8RL_OK);
  const std::function<fp8rl_status(const fp8rl_quantize_options&)> sizes = [&o](const fp8rl_quantize_options& options) {
    return fp8rl_quantized_sizes(&options, 2, 128, &o.code_count, &o.scale_count);
  };
  t.invalid("fp8rl_quantized_sizes", "options NULL", "options",
            [&o] { return fp8rl_quantized_sizes(nullptr, 2, 128, &o.code_count, &o.scale_count); });
  t.invalid("fp8rl_quantized_sizes", "out_code_count NULL", "out_code_count",
            [&o, q] { return fp8rl_quantized_sizes(&q, 2, 128, nullptr, &o.scale_count); });
  t.invalid("fp8rl_quantized_sizes", "out_scale_count NULL", "out_scale_count",
            [&o, q] { return fp8rl_quantized_sizes(&q, 2, 128, &o.code_count, nullptr); });
  t.struct_sizes("fp8rl_quantized_sizes", "options->struct_size", q, sizes);
  t.enums("fp8rl_quantized_sizes", "options->format", q, &fp8rl_quantize_options::format, sizes);
  t.enums("fp8rl_quantized_sizes", "options->layout", q, &fp8rl_quantize_options::layout, sizes);
  t.enums("fp8rl_quantized_sizes", "options->scale_format", q, &fp8rl_quantize_options::scale_format, sizes);
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 128}, {-1, 128}, {2, 0}, {2, -1}, {kHugeCount, kHugeCount}}) {
    const std::string shape = std::to_string(rows) + " x " + std::to_string(cols);
    const std::string names = "shape";  // "input has shape [0, 128]: both dimensions must be positive"
    t.invalid("fp8rl_quantized_sizes", shape, names,
              [&o, q, rows = rows, cols = cols] { return fp8rl_quantized_sizes(&q, rows, cols, &o.code_count, &o.scale_count); });
    t.invalid("fp8rl_quantize", shape, names, [&o, c, q, rows = rows, cols = cols] {
      return fp8rl_quantize(c, &q, kInput, FP8RL_DTYPE_F32, rows, cols, o.codes, 256, o.scales, 2);
    });
  }
  const std::string quantize = "fp8rl_quantize";
  t.invalid(quantize, "context NULL", "context", [&o, q] {
    return fp8rl_quantize(nullptr, &q, kInput, FP8RL_DTYPE_F32, 2, 128, o.codes, 256, o.scales, 2);
  });
  t.invalid(quantize, "input NULL", "input", [&o, c, q] {
    return fp8rl_quantize(c, &q, nullptr, FP8RL_DTYPE_F32, 2, 128, o.codes, 256, o.scales, 2);
  });
  t.invalid(quantize, "codes NULL", "codes",
            [&o, c, q] { return fp8rl_quantize(c, &q, kInput, FP8RL_DTYPE_F32, 2, 128, nullptr, 256, o.scales, 2); });
  t.invalid(quantize, "scales NULL", "scales",
            [&o, c, q] { return fp8rl_quantize(c, &q, kInput, FP8RL_DTYPE_F32, 2, 128, o.codes, 256, nullptr, 2); });
  t.invalid(quantize, "code_count too small", "code_count",
            [&o, c, q] { return fp8rl_quantize(c, &q, kInput, FP8RL_DTYPE_F32, 2, 128, o.codes, 255, o.scales, 2); });
  t.invalid(quantize, "scale_count too small", "scale_count",
            [&o, c, q] { return fp8rl_quantize(c, &q, kInput, FP8RL_DTYPE_F32, 2, 128, o.codes, 256, o.scales, 1); });
  for (const int32_t raw : kBadEnums)
    t.invalid(quantize, "input_dtype " + std::to_string(raw), "input_dtype", [&o, c, q, raw] {
      fp8rl_dtype dtype;
      std::memcpy(&dtype, &raw, sizeof raw);
      return fp8rl_quantize(c, &q, kInput, dtype, 2, 128, o.codes, 256, o.scales, 2);
    });
  t.add(quantize, "a NaN input", FP8RL_ERROR_NON_FINITE, "input", [&o, c, q] {
    static float with_nan[256] = {1.0f};
    with_nan[7] = kNaN;
    return fp8rl_quantize(c, &q, with_nan, FP8RL_DTYPE_F32, 2, 128, o.codes, 256, o.scales, 2);
  });
  t.struct_sizes<fp8rl_quantize_options>(quantize, "options->struct_size", q, [&o, c](const fp8rl_quantize_options& options) {
    return fp8rl_quantize(c, &options, kInput, FP8RL_DTYPE_F32, 2, 128, o.codes, 256, o.scales, 2);
  });

  static const uint8_t kCodes[4096] = {};
  static const float kScales[64] = {1.0f, 1.0f};
  const std::string dequantize = "fp8rl_dequantize";
  t.invalid(dequantize, "context NULL", "context",
            [&o, q] { return fp8rl_dequantize(nullptr, &q, kCodes, 256, kScales, 2, 2, 128, o.c, 1024); });
  t.invalid(dequantize, "codes NULL", "codes",
            [&o, c, q] { return fp8rl_dequantize(c, &q, nullptr, 256, kScales, 2, 2, 128, o.c, 1024); });
  t.invalid(dequantize, "scales NULL", "scales",
            [&o, c, q] { return fp8rl_dequantize(c, &q, kCodes, 256, nullptr, 2, 2, 128, o.c, 1024); });
  t.invalid(dequantize, "output NULL", "output",
            [c, q] { return fp8rl_dequantize(c, &q, kCodes, 256, kScales, 2, 2, 128, nullptr, 1024); });
  t.invalid(dequantize, "code_count wrong", "code_count",
            [&o, c, q] { return fp8rl_dequantize(c, &q, kCodes, 255, kScales, 2, 2, 128, o.c, 1024); });
  t.invalid(dequantize, "output too small", "output",
            [&o, c, q] { return fp8rl_dequantize(c, &q, kCodes, 256, kScales, 2, 2, 128, o.c, 255); });
  t.add(dequantize, "a NaN scale", FP8RL_ERROR_NON_FINITE, "scales", [&o, c, q] {
    static const float nan_scales[2] = {1.0f, kNaN};
    return fp8rl_dequantize(c, &q, kCodes, 256, nan_scales, 2, 2, 128, o.c, 1024);
  });

  // GEMMs: a [4, 128] x w [8, 128]^T.
  static const float kOnes[2] = {1.0f, 1.0f};
  fp8rl_fp8_matrix a{kCodes, 512, kOnes, 4, 4, 128, FP8RL_LAYOUT_TILE_1X128};
  fp8rl_fp8_matrix wt{kCodes, 1024, kOnes, 1, 8, 128, FP8RL_LAYOUT_BLOCK_128X128};
  static const float kFourOnes[4] = {1, 1, 1, 1};
  a.scales = kFourOnes;
  const std::string gemm = "fp8rl_gemm_fp8";
  t.invalid(gemm, "context NULL", "context", [&o, a, wt] { return fp8rl_gemm_fp8(nullptr, &a, &wt, o.c, FP8RL_DTYPE_F32, 32); });
  t.invalid(gemm, "a NULL", "a", [&o, c, wt] { return fp8rl_gemm_fp8(c, nullptr, &wt, o.c, FP8RL_DTYPE_F32, 32); });
  t.invalid(gemm, "w NULL", "w", [&o, c, a] { return fp8rl_gemm_fp8(c, &a, nullptr, o.c, FP8RL_DTYPE_F32, 32); });
  t.invalid(gemm, "c NULL", "c", [c, a, wt] { return fp8rl_gemm_fp8(c, &a, &wt, nullptr, FP8RL_DTYPE_F32, 32); });
  t.invalid(gemm, "c_count too small", "c_count",
            [&o, c, a, wt] { return fp8rl_gemm_fp8(c, &a, &wt, o.c, FP8RL_DTYPE_F32, 31); });
  for (const int32_t raw : kBadEnums) {
    t.invalid(gemm, "c_dtype " + std::to_string(raw), "c_dtype", [&o, c, a, wt, raw] {
      fp8rl_dtype dtype;
      std::memcpy(&dtype, &raw, sizeof raw);
      return fp8rl_gemm_fp8(c, &a, &wt, o.c, dtype, 32);
    });
    fp8rl_fp8_matrix bad_layout = wt;
    std::memcpy(&bad_layout.layout, &raw, sizeof raw);
    t.invalid(gemm, "w->layout " + std::to_string(raw), "w->layout",
              [&o, c, a, bad_layout] { return fp8rl_gemm_fp8(c, &a, &bad_layout, o.c, FP8RL_DTYPE_F32, 32); });
  }
  fp8rl_fp8_matrix short_k = wt;
  short_k.cols = 64;
  short_k.code_count = 512;
  t.invalid(gemm, "K differs", "cols", [&o, c, a, short_k] { return fp8rl_gemm_fp8(c, &a, &short_k, o.c, FP8RL_DTYPE_F32, 32); });
  fp8rl_fp8_matrix null_codes = a;
  null_codes.codes = nullptr;
  t.invalid(gemm, "a->codes NULL", "codes",
            [&o, c, null_codes, wt] { return fp8rl_gemm_fp8(c, &null_codes, &wt, o.c, FP8RL_DTYPE_F32, 32); });
  fp8rl_fp8_matrix negative = a;
  negative.rows = -1;
  t.invalid(gemm, "a->rows -1", "shape",
            [&o, c, negative, wt] { return fp8rl_gemm_fp8(c, &negative, &wt, o.c, FP8RL_DTYPE_F32, 32); });

  static const uint16_t kBf16[4096] = {};
  const std::string bf16 = "fp8rl_gemm_bf16";
  t.invalid(bf16, "context NULL", "context",
            [&o] { return fp8rl_gemm_bf16(nullptr, kBf16, 512, kBf16, 1024, 4, 8, 128, o.c, FP8RL_DTYPE_F32, 32); });
  t.invalid(bf16, "a NULL", "a", [&o, c] { return fp8rl_gemm_bf16(c, nullptr, 512, kBf16, 1024, 4, 8, 128, o.c, FP8RL_DTYPE_F32, 32); });
  t.invalid(bf16, "w NULL", "w", [&o, c] { return fp8rl_gemm_bf16(c, kBf16, 512, nullptr, 1024, 4, 8, 128, o.c, FP8RL_DTYPE_F32, 32); });
  t.invalid(bf16, "c NULL", "c", [c] { return fp8rl_gemm_bf16(c, kBf16, 512, kBf16, 1024, 4, 8, 128, nullptr, FP8RL_DTYPE_F32, 32); });
  for (const auto& [m, n, k] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {-1, 8, 128}, {4, -1, 128}, {4, 8, 0}, {kHugeCount, 8, kHugeCount}})
    t.invalid(bf16, "shape " + std::to_string(m) + " " + std::to_string(n) + " " + std::to_string(k),
              k == 0 ? "shape" : m < 0 || m == kHugeCount ? "m" : "n", [&o, c, m = m, n = n, k = k] {
                return fp8rl_gemm_bf16(c, kBf16, 512, kBf16, 1024, m, n, k, o.c, FP8RL_DTYPE_F32, 32);
              });
  t.invalid(bf16, "a_count too small", "a_count",
            [&o, c] { return fp8rl_gemm_bf16(c, kBf16, 511, kBf16, 1024, 4, 8, 128, o.c, FP8RL_DTYPE_F32, 32); });
  t.invalid(bf16, "c_count too small", "c_count",
            [&o, c] { return fp8rl_gemm_bf16(c, kBf16, 512, kBf16, 1024, 4, 8, 128, o.c, FP8RL_DTYPE_F32, 31); });
}

}  // namespace capi_test::bad_input
