// Qwen3-MoE configs: Qwen3-30B-A3B's config.json (as published) field by
// field, its total and active parameter counts against a hand computation and
// the published 30.5B / 3.3B, Hugging Face's defaults for absent keys, the
// sparse-layer rule, save -> load round trips, every rejection, and the
// checkpoint names of a sparse and a dense layer.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/io/json.h"
#include "core/model/model_config.h"
#include "core/model/model_params.h"
#include "io/io_test_support.h"
#include "kernels/error.h"

namespace {

using fp8rl::Error;
using fp8rl::Status;
using fp8rl::model::ModelConfig;
using fp8rl::model::ModelFamily;

// Qwen/Qwen3-30B-A3B config.json.
constexpr const char* kQwen3_30B_A3B = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128,
  "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144,
  "max_position_embeddings": 40960, "max_window_layers": 48, "mlp_only_layers": [], "model_type": "qwen3_moe",
  "moe_intermediate_size": 768, "norm_topk_prob": true, "num_attention_heads": 32, "num_experts": 128,
  "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4, "output_router_logits": false,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
  "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false, "vocab_size": 151936
})";

ModelConfig parse(const std::string& text) {
  return fp8rl::model::parse_model_config(fp8rl::io::parse_json(text), "config.json");
}

std::string with(const std::string& from, const std::string& to) {
  std::string text = kQwen3_30B_A3B;
  const size_t at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  return text.replace(at, from.size(), to);
}

ModelConfig tiny_moe() {
  ModelConfig c = parse(kQwen3_30B_A3B);
  c.vocab_size = 50;
  c.hidden_size = 40;
  c.num_layers = 3;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.head_dim = 8;
  c.intermediate_size = 24;
  c.moe.num_experts = 4;
  c.moe.num_experts_per_tok = 2;
  c.moe.moe_intermediate_size = 12;
  c.moe.mlp_only_layers = {1};
  c.bos_token_id.reset();
  c.eos_token_ids = {};
  return c;
}

template <typename Action>
void check_fails(Action action, Status status, const std::string& needle) {
  try {
    action();
    FAIL("no error; expected " << needle);
  } catch (const Error& error) {
    CHECK_MESSAGE(error.status() == status, error.what());
    CHECK_MESSAGE(std::string(error.what()).find(needle) != std::string::npos, error.what());
  }
}

}  // namespace

TEST_CASE("Qwen3-30B-A3B: every field, and 30.5B total / 3.3B active weights by hand") {
  const ModelConfig c = parse(kQwen3_30B_A3B);
  CHECK(c.family == ModelFamily::qwen3_moe);
  CHECK(c.qk_norm);
  CHECK(c.moe.num_experts == 128);
  CHECK(c.moe.num_experts_per_tok == 8);
  CHECK(c.moe.moe_intermediate_size == 768);
  CHECK(c.moe.norm_topk_prob);
  CHECK(c.moe.decoder_sparse_step == 1);
  CHECK(c.moe.mlp_only_layers.empty());
  CHECK(c.moe.router_aux_loss_coef == 0.001);
  CHECK(fp8rl::model::sparse_layer_count(c) == 48);

  // Per layer: q [4096, 2048], k and v [512, 2048], o [2048, 4096], q/k norms
  // [128] each, two RMSNorms [2048], the router [128, 2048], and 128 experts
  // of gate, up [768, 2048] and down [2048, 768].
  const int64_t attention = 4096LL * 2048 + 2 * 512LL * 2048 + 2048LL * 4096 + 2 * 128 + 2 * 2048;
  const int64_t router = 128LL * 2048;
  const int64_t expert = 3 * 768LL * 2048;
  const int64_t outside = 2 * 151936LL * 2048 + 2048;  // embeddings, untied head, final norm
  const int64_t total = outside + 48 * (attention + router + 128 * expert);
  const int64_t active = outside + 48 * (attention + router + 8 * expert);
  CHECK(fp8rl::model::parameter_count(c) == total);
  CHECK(fp8rl::model::active_parameter_count(c) == active);
  CHECK(total == 30532122624LL);
  CHECK(active == 3353032704LL);
  CHECK(std::llround(static_cast<double>(total) / 1e8) == 305);  // "30.5B"
  CHECK(std::llround(static_cast<double>(active) / 1e8) == 34);  // 3.35B, published as "3.3B"
  CHECK(fp8rl::model::tensor_count(c) == 1 + 48 * (9 + 128 * 3) + 1 + 1);
}

TEST_CASE("absent MoE keys take Hugging Face's Qwen3MoeConfig defaults") {
  std::string text = kQwen3_30B_A3B;
  for (const char* key : {"\"num_experts\": 128,", "\"num_experts_per_tok\": 8,", "\"moe_intermediate_size\": 768,",
                          "\"norm_topk_prob\": true,", "\"decoder_sparse_step\": 1,", "\"mlp_only_layers\": [],",
                          "\"router_aux_loss_coef\": 0.001,"}) {
    const size_t at = text.find(key);
    REQUIRE(at != std::string::npos);
    text.erase(at, std::string(key).size());
  }
  const ModelConfig c = parse(text);
  CHECK(c.moe.num_experts == 128);
  CHECK(c.moe.num_experts_per_tok == 8);
  CHECK(c.moe.moe_intermediate_size == 768);
  CHECK_FALSE(c.moe.norm_topk_prob);  // Hugging Face's default, unlike the published file
  CHECK(c.moe.decoder_sparse_step == 1);
  CHECK(c.moe.router_aux_loss_coef == 0.001);
}

TEST_CASE("sparse layers: mlp_only_layers and decoder_sparse_step as Hugging Face decides them") {
  ModelConfig c = parse(with("\"mlp_only_layers\": []", "\"mlp_only_layers\": [0, 5]"));
  CHECK_FALSE(fp8rl::model::is_sparse_layer(c, 0));
  CHECK(fp8rl::model::is_sparse_layer(c, 1));
  CHECK_FALSE(fp8rl::model::is_sparse_layer(c, 5));
  CHECK(fp8rl::model::sparse_layer_count(c) == 46);
  c = parse(with("\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 3"));
  CHECK_FALSE(fp8rl::model::is_sparse_layer(c, 0));
  CHECK_FALSE(fp8rl::model::is_sparse_layer(c, 1));
  CHECK(fp8rl::model::is_sparse_layer(c, 2));
  CHECK(fp8rl::model::sparse_layer_count(c) == 16);
  // A dense layer of an MoE model has the dense MLP of intermediate_size.
  const int64_t dense_extra = 3 * 6144LL * 2048 - (128LL * 2048 + 128 * 3 * 768LL * 2048);
  CHECK(fp8rl::model::parameter_count(c) == 30532122624LL + 32 * dense_extra);
}

TEST_CASE("MoE configs round-trip through config.json") {
  ModelConfig c = tiny_moe();
  c.moe.norm_topk_prob = false;
  c.moe.decoder_sparse_step = 2;
  c.moe.mlp_only_layers = {2, 0};
  c.moe.router_aux_loss_coef = 0.0;
  fp8rl::test::TempDir dir;
  const std::string path = dir.file("config.json");
  fp8rl::model::save_model_config(path, c);
  const ModelConfig back = fp8rl::model::load_model_config(path);
  CHECK(back.family == ModelFamily::qwen3_moe);
  CHECK(back.moe.num_experts == c.moe.num_experts);
  CHECK(back.moe.num_experts_per_tok == c.moe.num_experts_per_tok);
  CHECK(back.moe.moe_intermediate_size == c.moe.moe_intermediate_size);
  CHECK(back.moe.norm_topk_prob == c.moe.norm_topk_prob);
  CHECK(back.moe.decoder_sparse_step == c.moe.decoder_sparse_step);
  CHECK(back.moe.mlp_only_layers == c.moe.mlp_only_layers);
  CHECK(back.moe.router_aux_loss_coef == c.moe.router_aux_loss_coef);
  const fp8rl::io::Json json = fp8rl::model::model_config_to_json(c);
  CHECK(json.find("architectures")->elements()[0].as_string() == "Qwen3MoeForCausalLM");
}

TEST_CASE("MoE configs that cannot describe a model are refused, naming the field") {
  ModelConfig c = tiny_moe();
  c.moe.num_experts_per_tok = 5;
  check_fails([&] { fp8rl::model::validate(c); }, Status::invalid_argument, "num_experts_per_tok (5) exceeds");
  c = tiny_moe();
  c.moe.num_experts = 0;
  check_fails([&] { fp8rl::model::validate(c); }, Status::invalid_argument, "num_experts must be positive");
  c = tiny_moe();
  c.moe.num_experts = 2000;
  check_fails([&] { fp8rl::model::validate(c); }, Status::invalid_argument, "num_experts is 2000, above");
  c = tiny_moe();
  c.moe.mlp_only_layers = {3};
  check_fails([&] { fp8rl::model::validate(c); }, Status::invalid_argument, "mlp_only_layers[0] = 3");
  c = tiny_moe();
  c.moe.mlp_only_layers = {1, 1};
  check_fails([&] { fp8rl::model::validate(c); }, Status::invalid_argument, "names layer 1 twice");
  c = tiny_moe();
  c.moe.decoder_sparse_step = 0;
  check_fails([&] { fp8rl::model::validate(c); }, Status::invalid_argument, "decoder_sparse_step");
  c = tiny_moe();
  c.moe.moe_intermediate_size = -4;
  check_fails([&] { fp8rl::model::validate(c); }, Status::invalid_argument, "moe_intermediate_size");
  c = tiny_moe();
  c.family = ModelFamily::qwen3;
  check_fails([&] { fp8rl::model::validate(c); }, Status::invalid_argument, "qwen3 has no experts");

  check_fails([&] { parse(with("\"num_experts_per_tok\": 8", "\"num_experts_per_tok\": 129")); }, Status::corrupt_data,
              "num_experts_per_tok (129) exceeds");
  check_fails([&] { parse(with("\"mlp_only_layers\": []", "\"mlp_only_layers\": 3")); }, Status::corrupt_data,
              "mlp_only_layers");
  check_fails([&] { parse(with("\"mlp_only_layers\": []", "\"mlp_only_layers\": [48]")); }, Status::corrupt_data,
              "mlp_only_layers[0] = 48");
  check_fails([&] { parse(with("\"norm_topk_prob\": true", "\"norm_topk_prob\": 1")); }, Status::corrupt_data,
              "norm_topk_prob");
  check_fails([&] { parse(with("\"router_aux_loss_coef\": 0.001", "\"router_aux_loss_coef\": -1")); },
              Status::corrupt_data, "router_aux_loss_coef");
  std::string many = "[";
  for (int i = 0; i < 1100; ++i) many += std::to_string(i % 40) + (i + 1 < 1100 ? "," : "]");
  check_fails([&] { parse(with("\"mlp_only_layers\": []", "\"mlp_only_layers\": " + many)); }, Status::corrupt_data,
              "above the layer limit");
}

TEST_CASE("a sparse layer's tensors: the router, then each expert's gate, up and down, in checkpoint order") {
  const ModelConfig c = tiny_moe();
  fp8rl::model::ModelParams params;
  params.config = c;
  fp8rl::model::size_layers(params);
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  fp8rl::model::for_each_tensor(
      params, [&](const std::string& name, const std::vector<int64_t>& shape, fp8rl::model::HostTensor&) {
        names.push_back(name);
        shapes.push_back(shape);
      });
  CHECK(static_cast<int64_t>(names.size()) == fp8rl::model::tensor_count(c));
  const auto at = [&](const std::string& name) {
    return static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin());
  };
  const size_t router = at("model.layers.0.mlp.gate.weight");
  REQUIRE(router < names.size());
  CHECK(shapes[router] == std::vector<int64_t>{4, 40});
  CHECK(names[router + 1] == "model.layers.0.mlp.experts.0.gate_proj.weight");
  CHECK(shapes[router + 1] == std::vector<int64_t>{12, 40});
  CHECK(names[router + 2] == "model.layers.0.mlp.experts.0.up_proj.weight");
  CHECK(names[router + 3] == "model.layers.0.mlp.experts.0.down_proj.weight");
  CHECK(shapes[router + 3] == std::vector<int64_t>{40, 12});
  CHECK(names[router + 12] == "model.layers.0.mlp.experts.3.down_proj.weight");
  CHECK(at("model.layers.0.mlp.gate_proj.weight") == names.size());  // no dense MLP in a sparse layer
  CHECK(shapes[at("model.layers.1.mlp.gate_proj.weight")] == std::vector<int64_t>{24, 40});  // mlp_only layer
  CHECK(at("model.layers.1.mlp.gate.weight") == names.size());
  CHECK(at("model.layers.1.mlp.experts.0.up_proj.weight") == names.size());
  CHECK(params.layers[0].experts.size() == 4);
  CHECK(params.layers[1].experts.empty());
}
