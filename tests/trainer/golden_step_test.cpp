// Two RL steps on tiny models (BF16 and FP8 with KV cache and attention,
// micro-batched; clipping off, inactive and active), recorded bit for bit: metrics, master
// weights, AdamW moments, attention scales and the next rollout. The record
// was first written by the trainer before the training iteration was rebuilt
// (one recompute pass, host optimizer) and held through that rebuild (with
// one exception: the gradient norm is summed on the backend in the fixed
// order of kernels/common/reduction_order.h, so its last bits differ, about
// 1e-13 relative; it must agree to 1e-12, and the clipping scale derived
// from it is still bitwise the record's). It was rewritten once, on purpose,
// when the CPU GEMMs took the VDPBF16PS contract (docs/numerics.md): every
// product-sum order changed. Any other change of numerics fails here.
// FP8RL_WRITE_GOLDEN=<file> writes the record instead of comparing (only to
// be done with a reviewed reason).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/rollout/rollout.h"
#include "core/train/trainer.h"
#include "trainer/trainer_test_support.h"

namespace fp8rl::test {
namespace {

// FNV-1a over the bit patterns: equal hashes for equal arrays, bit for bit.
template <class T>
std::string bits_hash(const std::vector<T>& values) {
  uint64_t h = 1469598103934665603ull;
  for (const T& v : values) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    for (unsigned char b : bytes) h = (h ^ b) * 1099511628211ull;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

std::string hex(double v) {
  char out[40];
  std::snprintf(out, sizeof out, "%a", v);
  return out;
}

class Record {
 public:
  void add(const std::string& key, const std::string& value) { text_ << key << ' ' << value << '\n'; }
  void add(const std::string& key, double value) { add(key, hex(value)); }
  void add(const std::string& key, int64_t value) { add(key, std::to_string(value)); }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
};

void record_metrics(Record& r, const std::string& p, const train::StepMetrics& m) {
  r.add(p + "skipped", static_cast<int64_t>(m.skipped));
  r.add(p + "loss", m.loss);
  r.add(p + "grad_norm", m.grad_norm);
  r.add(p + "clipped", static_cast<int64_t>(m.clipped));
  r.add(p + "learning_rate", m.learning_rate);
  r.add(p + "clip_fraction", m.loss_stats.clip_fraction);
  r.add(p + "ratio_mean", m.loss_stats.ratio_mean);
  r.add(p + "is_weight_mean", m.loss_stats.is_weight_mean);
  r.add(p + "is_truncated_fraction", m.loss_stats.is_truncated_fraction);
  r.add(p + "entropy", m.entropy);
  r.add(p + "token_mult_prob_error", m.mismatch.token_mult_prob_error);
  r.add(p + "gen_kl_error", m.mismatch.gen_kl_error);
  r.add(p + "mismatch_is_weight_mean", m.mismatch.is_weight_mean);
  r.add(p + "reward_mean", m.reward_mean);
  r.add(p + "completion_tokens", m.completion_tokens);
  r.add(p + "trained_tokens", m.trained_tokens);
}

void record_state(Record& r, const std::string& p, train::Trainer& trainer) {
  train::TrainingState s = trainer.state();
  size_t i = 0;
  model::for_each_tensor(s.params, [&](const std::string& name, const std::vector<int64_t>&, model::HostTensor& t) {
    r.add(p + "weight." + name, bits_hash(t.data));
    r.add(p + "exp_avg." + name, bits_hash(s.exp_avg[i]));
    r.add(p + "exp_avg_sq." + name, bits_hash(s.exp_avg_sq[i]));
    ++i;
  });
  r.add(p + "scales.q", bits_hash(s.scales.q));
  r.add(p + "scales.k", bits_hash(s.scales.k));
  r.add(p + "scales.v", bits_hash(s.scales.v));
}

struct Scenario {
  const char* name;
  model::ModelConfig config;
  policy::Recipe recipe;
  double max_grad_norm;
};

std::string run_scenario(const Scenario& scenario) {
  Context context(cpu_request(2), Logger());
  policy::Policy policy(context, tiny_params(scenario.config), scenario.recipe);
  policy.set_attention_scales(test_scales(scenario.config.num_layers));
  train::TrainerOptions options;
  options.schedule.base_lr = 2e-3;
  options.loss.importance.mode = train::ImportanceMode::truncated;
  options.advantages.group_size = 2;
  options.advantages.normalize_by_std = true;
  options.micro_batch_tokens = 40;
  options.max_grad_norm = scenario.max_grad_norm;
  train::Trainer trainer(policy, options);
  const FlatSequences prompts = paired_prompts(scenario.config, {5, 9, 3, 7});
  Record r;
  for (int step = 1; step <= 2; ++step) {
    const std::string p = std::string(scenario.name) + ".step" + std::to_string(step) + ".";
    const RolloutBatch batch = generate_batch(policy, prompts, seeds_from(40 + 10 * step, 8), test_sampling());
    r.add(p + "rollout_tokens", bits_hash(batch.sequences.tokens));
    r.add(p + "rollout_logp", bits_hash(batch.logp_gen));
    record_metrics(r, p, trainer.step(batch.view()));
    record_state(r, p, trainer);
  }
  return r.text();
}

std::vector<Scenario> scenarios() {
  const std::vector<NamedRecipe> recipes = all_recipes();
  return {{"llama_bf16_unclipped", tiny_llama(), recipes[0].recipe, 0.0},
          {"qwen3_fp8_kv_attention", tiny_qwen3(), recipes[4].recipe, 100.0},
          {"qwen2_fp8_clipped", tiny_qwen2(), recipes[1].recipe, 0.05}};
}

// A line of the record and the same line now: equal, or for the gradient
// norm (see the top of this file) within 1e-12 relative.
bool lines_agree(const std::string& want, const std::string& got) {
  if (want == got) return true;
  const size_t space = want.find(' ');
  const std::string key = want.substr(0, space);
  if (key.size() < 10 || key.compare(key.size() - 10, 10, ".grad_norm") != 0 || got.substr(0, space + 1) != key + " ")
    return false;
  const double a = std::strtod(want.c_str() + space + 1, nullptr), b = std::strtod(got.c_str() + space + 1, nullptr);
  return std::fabs(a - b) <= 1e-12 * std::fabs(a);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("two steps give bitwise the recorded metrics, weights, moments, scales and rollout") {
  CHECK_FALSE(lines_agree("a.grad_norm 0x1p+0", "a.grad_norm 0x1.00001p+0"));  // the tolerance can fail
  CHECK(lines_agree("a.grad_norm 0x1p+0", "a.grad_norm 0x1.0000000000001p+0"));
  CHECK_FALSE(lines_agree("a.loss 0x1p+0", "a.loss 0x1.0000000000001p+0"));
  std::string all;
  for (const Scenario& s : scenarios()) all += run_scenario(s);
  if (const char* out = std::getenv("FP8RL_WRITE_GOLDEN")) {
    std::ofstream(out) << all;
    MESSAGE("wrote " << out);
    return;
  }
  const std::string golden = read_file(FP8RL_GOLDEN_DIR "/two_steps.txt");
  REQUIRE_FALSE(golden.empty());
  std::istringstream expected(golden), actual(all);
  std::string want, got;
  int64_t lines = 0;
  while (std::getline(expected, want)) {
    REQUIRE(std::getline(actual, got));
    CAPTURE(want);
    CAPTURE(got);
    CHECK(lines_agree(want, got));
    ++lines;
  }
  CHECK_FALSE(std::getline(actual, got));
  CHECK(lines > 100);
}

}  // namespace fp8rl::test
