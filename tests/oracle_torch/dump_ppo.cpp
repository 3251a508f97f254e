// Runs one PPO training iteration (Trainer::iterate, several mini-batches)
// on a Hugging Face folder and a rollout batch and writes what it measured
// and the weights it left, so that tests/oracle_torch/torch_ppo.py can
// compare them with an independent PyTorch PPO.
//
//   dump_ppo --model DIR --recipe bf16|fp8 --batch BATCH.json --out OUT.safetensors
//
// BATCH.json: {"sequences": [[id, ...], ...], "prompt_lengths": [n, ...],
//              "logp_gen": [per completion token], "rewards": [per sequence],
//              "options": {"minibatches", "group_size", "normalize_by_std",
//                          "std_epsilon", "clip_low", "clip_high", "is_cap",
//                          "learning_rate", "beta1", "beta2", "adam_eps",
//                          "weight_decay", "max_grad_norm", "temperature",
//                          "micro_batch_tokens"}}
// The loss is the clipped policy gradient, token mean over each
// mini-batch, importance weights truncated at is_cap (low 0); logp_old is
// the trainer's own (the host gives none); group-mean advantages with the
// sample std; a constant learning rate.
// OUT.safetensors, all F32: the final master weights under their Hugging
// Face names; per mini-batch ([minibatches]) "minibatch.<field>" for loss,
// grad_norm, clipped, skipped, tokens and the loss statistics clip_fraction,
// ratio_mean, ratio_min, ratio_max, old_kl_k3_mean, is_weight_mean,
// is_truncated_fraction; the iteration's mismatch metrics as
// "mismatch.<field>" [1].
// CPU backend with FP8RL_THREADS threads (default 2). Exit status 0 on
// success, 2 for bad arguments, 1 for a library error (message on stderr).
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <memory>
#include <optional>
#include <vector>

#include "core/context.h"
#include "core/io/json.h"
#include "core/io/safetensors.h"
#include "core/model/model_params.h"
#include "core/policy/policy.h"
#include "core/train/trainer.h"
#include "oracle_torch/dump_support.h"

namespace {

using fp8rl::io::Json;

std::vector<float> floats(const Json& array) {
  std::vector<float> values;
  for (const Json& v : array.elements()) values.push_back(static_cast<float>(v.as_double()));
  return values;
}

struct Batch {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  std::vector<int64_t> prompt_lengths;
  std::vector<float> logp_gen;
  std::vector<float> rewards;
  fp8rl::train::TrainerOptions options;
};

fp8rl::train::TrainerOptions read_options(const Json& o) {
  fp8rl::train::TrainerOptions options;
  options.minibatches = o.at("minibatches").as_int64();
  options.advantages.group_size = o.at("group_size").as_int64();
  options.advantages.normalize_by_std = o.at("normalize_by_std").as_bool();
  options.advantages.sample_std = true;
  options.advantages.epsilon = o.at("std_epsilon").as_double();
  options.loss.kind = fp8rl::train::LossKind::clipped_policy_gradient;
  options.loss.aggregation = fp8rl::train::Aggregation::token_mean;
  options.loss.clip_low = o.at("clip_low").as_double();
  options.loss.clip_high = o.at("clip_high").as_double();
  options.loss.importance.mode = fp8rl::train::ImportanceMode::truncated;
  options.loss.importance.low = 0.0;
  options.loss.importance.high = o.at("is_cap").as_double();
  options.schedule.kind = fp8rl::train::LrScheduleKind::constant;
  options.schedule.base_lr = o.at("learning_rate").as_double();
  options.optimizer.beta1 = o.at("beta1").as_double();
  options.optimizer.beta2 = o.at("beta2").as_double();
  options.optimizer.eps = o.at("adam_eps").as_double();
  options.optimizer.weight_decay = o.at("weight_decay").as_double();
  options.max_grad_norm = o.at("max_grad_norm").as_double();
  options.temperature = static_cast<float>(o.at("temperature").as_double());
  options.micro_batch_tokens = o.at("micro_batch_tokens").as_int64();
  return options;
}

Batch read_batch(const std::string& path) {
  const Json json = fp8rl::io::parse_json(fp8rl::oracle::read_text(path), path);
  Batch batch;
  for (const Json& sequence : json.at("sequences").elements()) {
    for (const Json& id : sequence.elements()) batch.tokens.push_back(static_cast<int32_t>(id.as_int64()));
    batch.offsets.push_back(static_cast<int64_t>(batch.tokens.size()));
  }
  for (const Json& n : json.at("prompt_lengths").elements()) batch.prompt_lengths.push_back(n.as_int64());
  batch.logp_gen = floats(json.at("logp_gen"));
  batch.rewards = floats(json.at("rewards"));
  batch.options = read_options(json.at("options"));
  return batch;
}

// Name -> values of the per-mini-batch and mismatch outputs.
std::map<std::string, std::vector<float>> iteration_outputs(const fp8rl::train::IterationMetrics& metrics) {
  std::map<std::string, std::vector<float>> out;
  for (const fp8rl::train::StepMetrics& m : metrics.minibatches) {
    const fp8rl::train::LossStats& s = m.loss_stats;
    const std::map<std::string, double> fields = {{"loss", m.loss},
                                                  {"grad_norm", m.grad_norm},
                                                  {"clipped", static_cast<double>(m.clipped)},
                                                  {"skipped", static_cast<double>(m.skipped)},
                                                  {"tokens", static_cast<double>(s.tokens)},
                                                  {"clip_fraction", s.clip_fraction},
                                                  {"ratio_mean", s.ratio_mean},
                                                  {"ratio_min", s.ratio_min},
                                                  {"ratio_max", s.ratio_max},
                                                  {"old_kl_k3_mean", s.old_kl_k3_mean},
                                                  {"is_weight_mean", s.is_weight_mean},
                                                  {"is_truncated_fraction", s.is_truncated_fraction}};
    for (const auto& [name, value] : fields) out["minibatch." + name].push_back(static_cast<float>(value));
  }
  const fp8rl::train::MismatchMetrics& mm = metrics.total.mismatch;
  const std::map<std::string, double> mismatch = {{"token_mult_prob_error", mm.token_mult_prob_error},
                                                  {"gen_kl_error", mm.gen_kl_error},
                                                  {"gen_kl_k1", mm.gen_kl_k1},
                                                  {"policy_kl_error", mm.policy_kl_error},
                                                  {"is_weight_mean", mm.is_weight_mean},
                                                  {"is_truncated_fraction", mm.is_truncated_fraction}};
  for (const auto& [name, value] : mismatch) out["mismatch." + name] = {static_cast<float>(value)};
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<fp8rl::oracle::DumpArgs> args = fp8rl::oracle::parse_dump_args(argc, argv);
  if (!args) return 2;
  try {
    const Batch batch = read_batch(args->batch);
    const std::unique_ptr<fp8rl::Context> context = fp8rl::oracle::cpu_context_from_env();
    const std::unique_ptr<fp8rl::policy::Policy> loaded = fp8rl::oracle::load_policy(*context, *args);
    fp8rl::policy::Policy& policy = *loaded;

    fp8rl::train::Trainer trainer(policy, batch.options);
    fp8rl::train::TrainBatch train_batch;
    train_batch.sequences = {batch.tokens.data(), batch.offsets.data(), static_cast<int64_t>(batch.offsets.size()) - 1};
    train_batch.prompt_lengths = batch.prompt_lengths.data();
    train_batch.logp_gen = batch.logp_gen.data();
    train_batch.rewards = batch.rewards.data();
    const std::map<std::string, std::vector<float>> outputs = iteration_outputs(trainer.iterate(train_batch));

    std::vector<fp8rl::io::SafetensorsTensorData> tensors;
    fp8rl::model::ModelParams trained = policy.params();  // downloaded from the trainer's arena
    fp8rl::model::for_each_tensor(
        trained, [&](const std::string& name, const std::vector<int64_t>& shape, fp8rl::model::HostTensor& t) {
          tensors.push_back({name, fp8rl::io::DType::f32, shape, t.data.data(), t.data.size() * sizeof(float)});
        });
    for (const auto& [name, values] : outputs)
      tensors.push_back({name,
                         fp8rl::io::DType::f32,
                         {static_cast<int64_t>(values.size())},
                         values.data(),
                         values.size() * sizeof(float)});
    fp8rl::io::write_safetensors(args->out, tensors);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dump_ppo: %s\n", error.what());
    return 1;
  }
  return 0;
}
