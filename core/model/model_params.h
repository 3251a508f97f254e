// The weights of a policy as FP32 host arrays (the master copy that training
// updates and from which every BF16/FP8 compute copy is derived), with their
// Hugging Face names, shapes and layouts ([out_features, in_features]).
//
// Usage:
//   ModelParams params = load_hf_model("SmolLM2-135M");         // config.json + safetensors
//   ModelParams fresh = random_model_params(config, /*seed=*/7);
//   save_hf_model("out", params, io::DType::bf16);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/io/safetensors.h"
#include "core/model/model_config.h"

namespace fp8rl::model {

// A dense row-major FP32 tensor; empty (no elements, shape {}) when the
// config has no such weight.
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;

  bool empty() const { return data.empty(); }
  int64_t rows() const { return shape.empty() ? 0 : shape[0]; }
  int64_t cols() const { return shape.size() < 2 ? 1 : shape[1]; }
};

// One expert of a sparse (Mixture-of-Experts) layer: a SwiGLU MLP of width
// moe_intermediate_size, model.layers.N.mlp.experts.E.{gate,up,down}_proj.weight.
struct ExpertParams {
  HostTensor gate_proj;  // [moe_intermediate, hidden]
  HostTensor up_proj;    // [moe_intermediate, hidden]
  HostTensor down_proj;  // [hidden, moe_intermediate]
};

// The parts of one layer; the layer table (core/model/layer_parts.h) says
// which a layer of a config has (a sparse layer has the router and the
// experts instead of the dense MLP).
struct LayerParams {
  HostTensor input_norm;           // [hidden]        model.layers.N.input_layernorm.weight
  HostTensor q_proj;               // [q_dim, hidden] model.layers.N.self_attn.q_proj.weight
  HostTensor k_proj;               // [kv_dim, hidden]
  HostTensor v_proj;               // [kv_dim, hidden]
  HostTensor o_proj;               // [hidden, q_dim]
  HostTensor q_bias;               // [q_dim]  self_attn.q_proj.bias   (attention_bias)
  HostTensor k_bias;               // [kv_dim]
  HostTensor v_bias;               // [kv_dim]
  HostTensor o_bias;               // [hidden] self_attn.o_proj.bias   (has_output_projection_bias)
  HostTensor q_norm;               // [head_dim] self_attn.q_norm.weight (qk_norm)
  HostTensor k_norm;               // [head_dim] self_attn.k_norm.weight (qk_norm)
  HostTensor post_attention_norm;  // [hidden]        post_attention_layernorm.weight
  HostTensor gate_proj;            // [intermediate, hidden] mlp.gate_proj.weight
  HostTensor up_proj;              // [intermediate, hidden] mlp.up_proj.weight
  HostTensor down_proj;            // [hidden, intermediate] mlp.down_proj.weight
  HostTensor router;               // [num_experts, hidden] mlp.gate.weight (sparse layers)
  std::vector<ExpertParams> experts;  // [num_experts] (sparse layers)
};

struct ModelParams {
  ModelConfig config;
  HostTensor embed_tokens;  // [vocab, hidden] model.embed_tokens.weight
  std::vector<LayerParams> layers;
  HostTensor final_norm;  // [hidden] model.norm.weight
  HostTensor lm_head;     // [vocab, hidden] lm_head.weight; empty when tie_word_embeddings
};

// Sizes params.layers to params.config's layer count and each sparse
// layer's experts to num_experts, tensors left empty: the skeleton that
// for_each_tensor walks and loaders fill.
void size_layers(ModelParams& params);

// Every tensor the config calls for, in a fixed order (embeddings, layers in
// order, final norm, head; in a sparse layer the router, then expert by
// expert), with its Hugging Face name and expected shape. The tensor is
// passed mutable so that loaders can fill it. The layers must be sized as
// size_layers sizes them (invalid_argument otherwise).
using TensorVisitor =
    std::function<void(const std::string& name, const std::vector<int64_t>& shape, HostTensor& tensor)>;
void for_each_tensor(ModelParams& params, const TensorVisitor& visit);

// How many tensors for_each_tensor visits for a validated config.
int64_t tensor_count(const ModelConfig& config);

// What a loader checks before it allocates what a config claims: that the
// files hold at least tensor_count(config) tensors and min_bytes_per_value
// bytes for each of parameter_count(config) values. corrupt_data naming
// `where` otherwise, so a small forged file cannot make a load allocate
// gigabytes or loop for minutes.
void check_files_can_hold(const ModelConfig& config, uint64_t tensors, uint64_t bytes, uint64_t min_bytes_per_value,
                          const std::string& where);

// Throws invalid_argument naming the tensor when a tensor's shape or size
// does not match the config, or non_finite when it holds NaN or infinity.
void check_model_params(const ModelParams& params);

struct RandomInitOptions {
  float std = 0.02f;  // linear layers and embeddings: N(0, std^2), Hugging Face's initializer_range
  // Norm weights are 1 and biases 0 unless perturb_norms_and_biases, which
  // draws norms from 1 + N(0, std^2) and biases from N(0, std^2) (tests use it
  // so that those weights matter).
  bool perturb_norms_and_biases = false;
};

// Deterministic for (config, seed, options) on every platform: values come
// from a counter-based generator, not from the C++ library's distributions.
ModelParams random_model_params(const ModelConfig& config, uint64_t seed, const RandomInitOptions& options = {});

// Loads a Hugging Face model folder: config.json plus either model.safetensors
// or model.safetensors.index.json and its shards. Tensors may be BF16, F16 or
// F32. Errors: io_error when the folder or a file cannot be read;
// corrupt_data naming the file and tensor for a missing or mis-shaped tensor,
// another dtype, an index that names a missing shard or a tensor absent from
// its shard, or any safetensors corruption (core/io/safetensors.h);
// non_finite for NaN or infinite weights; unsupported for an architecture
// this library does not implement. Tensors the model does not use (such as
// rotary_emb.inv_freq, or lm_head.weight of a tied model) are ignored.
ModelParams load_hf_model(const std::string& folder);

// Writes config.json and the weights in dtype (f32, bf16 or f16; BF16 and F16
// round to nearest even, F16 saturating is an error: invalid_argument when a
// weight overflows it). A model larger than max_shard_bytes is split into
// model-00001-of-0000N.safetensors shards plus model.safetensors.index.json,
// as Hugging Face does. Creates the folder if needed; each file is written
// atomically. check_model_params first.
void save_hf_model(const std::string& folder, const ModelParams& params, io::DType dtype,
                   int64_t max_shard_bytes = int64_t{5} << 30);

}  // namespace fp8rl::model
