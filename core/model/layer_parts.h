// The one table of a transformer layer's parts. Every place that walks a
// layer's weights (the tensor list and its checkpoint order, the parameter
// count, the compute copies and their refit, the transposed copies, the
// gradient pointers, the memory accounting) walks this table, so a new
// projection is one entry here (plus its role and its LayerParams member).
//
//   part                      HF name (model.layers.N. + name + .weight/.bias)  shape
//   input norm                input_layernorm                 [hidden]
//   q                         self_attn.q_proj                [q_dim, hidden]   bias: attention_bias
//   k, v                      self_attn.{k,v}_proj            [kv_dim, hidden]  bias: attention_bias
//   o                         self_attn.o_proj                [hidden, q_dim]   bias: has_output_projection_bias
//   q norm, k norm            self_attn.{q,k}_norm            [head_dim]        qk_norm only
//   post-attention norm       post_attention_layernorm        [hidden]
//   gate, up                  mlp.{gate,up}_proj              [intermediate, hidden]
//   down                      mlp.down_proj                   [hidden, intermediate]  dense-MLP layers
//   router                    mlp.gate                        [num_experts, hidden]   sparse layers, FP32
// and, in a sparse layer, per expert E (kExpertParts):
//   gate, up                  mlp.experts.E.{gate,up}_proj    [moe_intermediate, hidden]
//   down                      mlp.experts.E.down_proj         [hidden, moe_intermediate]
//
// Table order is checkpoint order (a linear's bias right after its weight;
// a sparse layer's experts after its router): safetensors files, the
// parameter arena and the golden record depend on it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/model/model_config.h"
#include "core/model/model_params.h"

namespace fp8rl::model {

// The linear projections of a layer; the index of each in per-layer arrays
// (CompiledLayer::linears, TransposedLayer, gradient pointers).
enum class Linear : size_t { q, k, v, o, gate, up, down, router };
inline constexpr size_t kLinearCount = 8;

// Which layers have a linear part: all, those with the dense MLP, or the
// sparse (Mixture-of-Experts) ones (is_sparse_layer).
enum class Presence : uint8_t { every_layer, dense_mlp_layers, sparse_layers };

// The RMSNorm scales of a layer, likewise.
enum class Norm : size_t { input, q, k, post_attention };
inline constexpr size_t kNormCount = 4;

constexpr size_t index(Linear role) { return static_cast<size_t>(role); }
constexpr size_t index(Norm role) { return static_cast<size_t>(role); }

struct LinearPart {
  Linear role;
  const char* name;                 // Hugging Face name inside the layer, without ".weight"
  HostTensor LayerParams::*weight;  // [out, in]
  HostTensor LayerParams::*bias;    // [out]; null: never has one
  int64_t (*out_features)(const ModelConfig&);
  int64_t (*in_features)(const ModelConfig&);
  bool (*has_bias)(const ModelConfig&);  // only asked when bias is not null
  // Runs in E4M3 when the layer's recipe has FP8 linears, otherwise BF16;
  // not eligible (the router) means FP32 whatever the recipe.
  bool fp8_eligible;
  Presence presence;
};

struct NormPart {
  Norm role;
  const char* name;                 // Hugging Face name inside the layer, without ".weight"
  HostTensor LayerParams::*weight;  // [size]
  int64_t (*size)(const ModelConfig&);
  bool (*present)(const ModelConfig&);
};

// One row of the table: a norm or a linear projection.
struct LayerPart {
  bool is_linear;
  LinearPart linear;  // when is_linear
  NormPart norm;      // otherwise
};

namespace parts {

constexpr int64_t hidden(const ModelConfig& c) { return c.hidden_size; }
constexpr int64_t intermediate(const ModelConfig& c) { return c.intermediate_size; }
constexpr int64_t head_dim(const ModelConfig& c) { return c.head_dim; }
inline int64_t q(const ModelConfig& c) { return q_dim(c); }
inline int64_t kv(const ModelConfig& c) { return kv_dim(c); }
constexpr bool always(const ModelConfig&) { return true; }
constexpr bool never(const ModelConfig&) { return false; }
constexpr bool attention_bias(const ModelConfig& c) { return c.attention_bias; }
inline bool o_bias(const ModelConfig& c) { return has_output_projection_bias(c); }
constexpr bool qk_norm(const ModelConfig& c) { return c.qk_norm; }
constexpr int64_t experts(const ModelConfig& c) { return c.moe.num_experts; }
constexpr int64_t moe_intermediate(const ModelConfig& c) { return c.moe.moe_intermediate_size; }

constexpr LayerPart linear(Linear role, const char* name, HostTensor LayerParams::*weight,
                           HostTensor LayerParams::*bias, int64_t (*out)(const ModelConfig&),
                           int64_t (*in)(const ModelConfig&), bool (*has_bias)(const ModelConfig&),
                           Presence presence = Presence::every_layer) {
  return {true, {role, name, weight, bias, out, in, has_bias, true, presence}, {}};
}

constexpr LayerPart f32_linear(Linear role, const char* name, HostTensor LayerParams::*weight,
                               int64_t (*out)(const ModelConfig&), int64_t (*in)(const ModelConfig&),
                               Presence presence) {
  return {true, {role, name, weight, nullptr, out, in, never, false, presence}, {}};
}

constexpr LayerPart norm(Norm role, const char* name, HostTensor LayerParams::*weight,
                         int64_t (*size)(const ModelConfig&), bool (*present)(const ModelConfig&)) {
  return {false, {}, {role, name, weight, size, present}};
}

}  // namespace parts

inline constexpr std::array<LayerPart, kLinearCount + kNormCount> kLayerParts = {{
    parts::norm(Norm::input, "input_layernorm", &LayerParams::input_norm, parts::hidden, parts::always),
    parts::linear(Linear::q, "self_attn.q_proj", &LayerParams::q_proj, &LayerParams::q_bias, parts::q, parts::hidden,
                  parts::attention_bias),
    parts::linear(Linear::k, "self_attn.k_proj", &LayerParams::k_proj, &LayerParams::k_bias, parts::kv, parts::hidden,
                  parts::attention_bias),
    parts::linear(Linear::v, "self_attn.v_proj", &LayerParams::v_proj, &LayerParams::v_bias, parts::kv, parts::hidden,
                  parts::attention_bias),
    parts::linear(Linear::o, "self_attn.o_proj", &LayerParams::o_proj, &LayerParams::o_bias, parts::hidden, parts::q,
                  parts::o_bias),
    parts::norm(Norm::q, "self_attn.q_norm", &LayerParams::q_norm, parts::head_dim, parts::qk_norm),
    parts::norm(Norm::k, "self_attn.k_norm", &LayerParams::k_norm, parts::head_dim, parts::qk_norm),
    parts::norm(Norm::post_attention, "post_attention_layernorm", &LayerParams::post_attention_norm, parts::hidden,
                parts::always),
    parts::linear(Linear::gate, "mlp.gate_proj", &LayerParams::gate_proj, nullptr, parts::intermediate, parts::hidden,
                  parts::never, Presence::dense_mlp_layers),
    parts::linear(Linear::up, "mlp.up_proj", &LayerParams::up_proj, nullptr, parts::intermediate, parts::hidden,
                  parts::never, Presence::dense_mlp_layers),
    parts::linear(Linear::down, "mlp.down_proj", &LayerParams::down_proj, nullptr, parts::hidden, parts::intermediate,
                  parts::never, Presence::dense_mlp_layers),
    parts::f32_linear(Linear::router, "mlp.gate", &LayerParams::router, parts::experts, parts::hidden,
                      Presence::sparse_layers),
}};

// The table's linear projections and norms, each in role order.
constexpr std::array<LinearPart, kLinearCount> linear_parts() {
  std::array<LinearPart, kLinearCount> out{};
  for (const LayerPart& part : kLayerParts)
    if (part.is_linear) out[index(part.linear.role)] = part.linear;
  return out;
}
constexpr std::array<NormPart, kNormCount> norm_parts() {
  std::array<NormPart, kNormCount> out{};
  for (const LayerPart& part : kLayerParts)
    if (!part.is_linear) out[index(part.norm.role)] = part.norm;
  return out;
}
inline constexpr std::array<LinearPart, kLinearCount> kLinearParts = linear_parts();
inline constexpr std::array<NormPart, kNormCount> kNormParts = norm_parts();

constexpr const LinearPart& part(Linear role) { return kLinearParts[index(role)]; }

// Whether a linear projection has a bias in this config.
inline bool has_bias(const LinearPart& part, const ModelConfig& config) {
  return part.bias != nullptr && part.has_bias(config);
}

// Whether layer `layer` of the config has the projection.
inline bool present(const LinearPart& part, const ModelConfig& config, int64_t layer) {
  switch (part.presence) {
    case Presence::every_layer: return true;
    case Presence::dense_mlp_layers: return !is_sparse_layer(config, layer);
    case Presence::sparse_layers: return is_sparse_layer(config, layer);
  }
  return false;
}

// The projections of one expert of a sparse layer, each with the expert's
// own 128x128 blocks under an FP8 recipe; the index of each in per-expert
// arrays (CompiledExpert::linears, gradient pointers).
enum class ExpertLinear : size_t { gate, up, down };
inline constexpr size_t kExpertLinearCount = 3;

constexpr size_t index(ExpertLinear role) { return static_cast<size_t>(role); }

struct ExpertPart {
  ExpertLinear role;
  const char* name;                  // inside mlp.experts.E., without ".weight"
  HostTensor ExpertParams::*weight;  // [out, in]
  int64_t (*out_features)(const ModelConfig&);
  int64_t (*in_features)(const ModelConfig&);
};

// In checkpoint order, which is role order.
inline constexpr std::array<ExpertPart, kExpertLinearCount> kExpertParts = {{
    {ExpertLinear::gate, "gate_proj", &ExpertParams::gate_proj, parts::moe_intermediate, parts::hidden},
    {ExpertLinear::up, "up_proj", &ExpertParams::up_proj, parts::moe_intermediate, parts::hidden},
    {ExpertLinear::down, "down_proj", &ExpertParams::down_proj, parts::hidden, parts::moe_intermediate},
}};

// "mlp.experts.E." + the part's name: its Hugging Face name inside the layer.
inline std::string expert_part_name(int64_t expert, const ExpertPart& part) {
  return "mlp.experts." + std::to_string(expert) + "." + part.name;
}

}  // namespace fp8rl::model
