// Writes the loss gradients our trainer computes for a Hugging Face folder
// and a batch, so that tests/oracle_torch/torch_grads.py can compare them
// with PyTorch autograd and with finite differences.
//
//   dump_grads --model DIR --recipe bf16|fp8 --batch BATCH.json --out OUT.safetensors
//
// BATCH.json: {"temperature": T, "loss": "policy_gradient" | "cross_entropy",
//              "sequences": [[id, ...], ...], "prompt_lengths": [n, ...],
//              "advantages": [a per sequence], "router_aux_loss_coef": c (optional, default 0)}
// The loss is a token mean over the completion tokens; the policy-gradient
// loss is the clipped surrogate with logp_old recomputed by the trainer (so
// the ratio is 1), plus c times the MoE load-balancing loss. OUT.safetensors: F32 gradients under the parameters'
// Hugging Face names, "logp" [completion tokens] and "loss" [1].
// CPU backend with FP8RL_THREADS threads (default 2). Exit status 0 on
// success, 2 for bad arguments, 1 for a library error (message on stderr).
#include <cstdint>
#include <cstdio>
#include <exception>
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

struct Batch {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  std::vector<int64_t> prompt_lengths;
  std::vector<float> advantages;
  float temperature = 1.0f;
  double router_aux_loss_coef = 0.0;
  bool cross_entropy = false;
};

Batch read_batch(const std::string& path) {
  const fp8rl::io::Json json = fp8rl::io::parse_json(fp8rl::oracle::read_text(path), path);
  Batch batch;
  batch.temperature = static_cast<float>(json.at("temperature").as_double());
  batch.cross_entropy = json.at("loss").as_string() == "cross_entropy";
  if (const fp8rl::io::Json* coef = json.find("router_aux_loss_coef")) batch.router_aux_loss_coef = coef->as_double();
  for (const fp8rl::io::Json& sequence : json.at("sequences").elements()) {
    for (const fp8rl::io::Json& id : sequence.elements()) batch.tokens.push_back(static_cast<int32_t>(id.as_double()));
    batch.offsets.push_back(static_cast<int64_t>(batch.tokens.size()));
  }
  for (const fp8rl::io::Json& n : json.at("prompt_lengths").elements())
    batch.prompt_lengths.push_back(static_cast<int64_t>(n.as_double()));
  for (const fp8rl::io::Json& a : json.at("advantages").elements())
    batch.advantages.push_back(static_cast<float>(a.as_double()));
  return batch;
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

    fp8rl::train::TrainerOptions options;
    options.temperature = batch.temperature;
    options.router_aux_loss_coef = batch.router_aux_loss_coef;
    options.loss.kind =
        batch.cross_entropy ? fp8rl::train::LossKind::cross_entropy : fp8rl::train::LossKind::clipped_policy_gradient;
    fp8rl::train::Trainer trainer(policy, options);
    fp8rl::train::TrainBatch train_batch;
    train_batch.sequences = {batch.tokens.data(), batch.offsets.data(), static_cast<int64_t>(batch.offsets.size()) - 1};
    train_batch.prompt_lengths = batch.prompt_lengths.data();
    if (!batch.cross_entropy) train_batch.advantages = batch.advantages.data();
    const fp8rl::train::BatchGradients result = trainer.gradients(train_batch);

    std::vector<fp8rl::io::SafetensorsTensorData> tensors;
    size_t slot = 0;
    fp8rl::model::for_each_tensor(policy.host_tensors(), [&](const std::string& name, const std::vector<int64_t>& shape,
                                                             fp8rl::model::HostTensor&) {
      const std::vector<float>& grad = result.grads[slot++];
      tensors.push_back({name, fp8rl::io::DType::f32, shape, grad.data(), grad.size() * sizeof(float)});
    });
    const float loss = static_cast<float>(result.loss.loss);
    tensors.push_back({"logp",
                       fp8rl::io::DType::f32,
                       {static_cast<int64_t>(result.logp.size())},
                       result.logp.data(),
                       result.logp.size() * sizeof(float)});
    tensors.push_back({"loss", fp8rl::io::DType::f32, {1}, &loss, sizeof(float)});
    fp8rl::io::write_safetensors(args->out, tensors);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dump_grads: %s\n", error.what());
    return 1;
  }
  return 0;
}
