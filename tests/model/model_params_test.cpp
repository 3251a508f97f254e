// The tensor list, check_model_params, random initialization and the FP16
// codec of the checkpoint code.
#include "core/model/model_params.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/model/half_codec.h"
#include "model/checkpoint_test_support.h"

namespace {

using fp8rl::Status;
using fp8rl::model::ModelConfig;
using fp8rl::model::ModelFamily;
using fp8rl::model::ModelParams;
using fp8rl::model::RandomInitOptions;
using fp8rl::test::expect_error;
using fp8rl::test::named_tensors;

ModelConfig qwen3_config() {
  ModelConfig c;
  c.family = ModelFamily::qwen3;
  c.vocab_size = 50;
  c.hidden_size = 40;
  c.num_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 12;
  c.head_dim_explicit = true;
  c.intermediate_size = 70;
  c.max_position_embeddings = 64;
  c.rms_norm_eps = 1e-6;
  c.qk_norm = true;
  c.attention_bias = true;  // also an o_proj bias for qwen3
  return c;
}

uint32_t bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

}  // namespace

TEST_CASE("model params: for_each_tensor lists Hugging Face names and shapes in order") {
  ModelParams params = fp8rl::model::random_model_params(qwen3_config(), 1);
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  fp8rl::model::for_each_tensor(
      params, [&](const std::string& name, const std::vector<int64_t>& shape, fp8rl::model::HostTensor&) {
        names.push_back(name);
        shapes.push_back(shape);
      });
  REQUIRE(names.size() == 1 + 2 * 15 + 2);
  CHECK(names.front() == "model.embed_tokens.weight");
  CHECK(shapes.front() == std::vector<int64_t>{50, 40});
  CHECK(names[1] == "model.layers.0.input_layernorm.weight");
  CHECK(names[2] == "model.layers.0.self_attn.q_proj.weight");
  CHECK(shapes[2] == std::vector<int64_t>{48, 40});
  CHECK(names[3] == "model.layers.0.self_attn.q_proj.bias");
  CHECK(names[8] == "model.layers.0.self_attn.o_proj.weight");
  CHECK(shapes[8] == std::vector<int64_t>{40, 48});
  CHECK(names[9] == "model.layers.0.self_attn.o_proj.bias");
  CHECK(names[10] == "model.layers.0.self_attn.q_norm.weight");
  CHECK(shapes[10] == std::vector<int64_t>{12});
  CHECK(names[15] == "model.layers.0.mlp.down_proj.weight");
  CHECK(shapes[15] == std::vector<int64_t>{40, 70});
  CHECK(names[names.size() - 2] == "model.norm.weight");
  CHECK(names.back() == "lm_head.weight");
}

TEST_CASE("model params: check_model_params names the tensor and both shapes") {
  const ModelParams good = fp8rl::model::random_model_params(qwen3_config(), 2);
  fp8rl::model::check_model_params(good);

  ModelParams bad = good;
  bad.layers[1].k_proj.shape = {40, 24};
  expect_error([&] { fp8rl::model::check_model_params(bad); }, Status::invalid_argument,
               {"model.layers.1.self_attn.k_proj.weight", "[40, 24]", "[24, 40]"});

  bad = good;
  bad.layers[0].k_norm.data.push_back(1.0f);
  expect_error([&] { fp8rl::model::check_model_params(bad); }, Status::invalid_argument,
               {"model.layers.0.self_attn.k_norm.weight", "13 values"});

  bad = good;
  bad.layers[1].v_bias.data[5] = -std::numeric_limits<float>::infinity();
  expect_error([&] { fp8rl::model::check_model_params(bad); }, Status::non_finite,
               {"model.layers.1.self_attn.v_proj.bias", "element 5", "infinite"});

  bad = good;
  bad.layers.pop_back();
  expect_error([&] { fp8rl::model::check_model_params(bad); }, Status::invalid_argument, {"1 layers", "2"});

  // A weight the config does not call for is an error, not silently dropped.
  bad = good;
  bad.config.tie_word_embeddings = true;
  expect_error([&] { fp8rl::model::check_model_params(bad); }, Status::invalid_argument,
               {"lm_head.weight", "tie_word_embeddings"});
}

TEST_CASE("model params: random init is deterministic per seed, norms 1 and biases 0") {
  const ModelConfig config = qwen3_config();
  const ModelParams a = fp8rl::model::random_model_params(config, 42);
  const ModelParams b = fp8rl::model::random_model_params(config, 42);
  const ModelParams c = fp8rl::model::random_model_params(config, 43);
  const auto ta = named_tensors(a), tb = named_tensors(b), tc = named_tensors(c);
  for (size_t t = 0; t < ta.size(); ++t) {
    CAPTURE(ta[t].first);
    CHECK(ta[t].second->data == tb[t].second->data);
    const bool matrix = ta[t].second->shape.size() == 2;
    if (matrix) {
      CHECK(ta[t].second->data != tc[t].second->data);
    } else {
      const float expected = ta[t].first.find(".bias") != std::string::npos ? 0.0f : 1.0f;
      for (float x : ta[t].second->data) CHECK(x == expected);
    }
  }
  // Two matrices of one model are not copies of each other.
  CHECK(a.layers[0].gate_proj.data != a.layers[0].up_proj.data);
  CHECK(a.layers[0].q_proj.data != a.layers[1].q_proj.data);
  // Pinned values, computed by a Python reimplementation of the documented
  // generator (FNV-1a name key, counter_rng uniforms, Box-Muller cosine
  // branch): they must not change across platforms or releases, or every
  // seeded test and from-scratch run would silently change.
  CHECK(bits(a.embed_tokens.data[0]) == 0xBCBBCD8Fu);
  CHECK(bits(a.embed_tokens.data[1]) == 0x3CDFC37Du);
  CHECK(bits(a.layers[1].down_proj.data[69]) == 0xBC3DBD5Au);
}

TEST_CASE("model params: random init statistics") {
  ModelConfig config = qwen3_config();
  config.vocab_size = 400;
  config.hidden_size = 200;  // 80000-element embedding
  RandomInitOptions options;
  options.std = 0.05f;
  options.perturb_norms_and_biases = true;
  const ModelParams params = fp8rl::model::random_model_params(config, 9, options);
  const auto moments = [](const std::vector<float>& data, double center) {
    double sum = 0, square = 0, fourth = 0;
    for (float x : data) {
      const double d = x - center;
      sum += d;
      square += d * d;
      fourth += d * d * d * d;
    }
    const double n = static_cast<double>(data.size());
    const double mean = sum / n, variance = square / n - mean * mean;
    return std::vector<double>{mean, std::sqrt(variance), fourth / n / (variance * variance)};
  };
  // 80000 samples: the mean's standard error is std / 283, the std's std / 400.
  const std::vector<double> embed = moments(params.embed_tokens.data, 0.0);
  CHECK(std::fabs(embed[0]) < 5 * 0.05 / 283);
  CHECK(std::fabs(embed[1] - 0.05) < 5 * 0.05 / 400);
  CHECK(std::fabs(embed[2] - 3.0) < 0.1);  // Gaussian kurtosis (se ~0.017)
  size_t beyond_3sigma = 0;
  for (float x : params.embed_tokens.data) beyond_3sigma += std::fabs(x) > 3 * 0.05f;
  CHECK(beyond_3sigma > 140);  // expected 216 (0.27%), se ~15
  CHECK(beyond_3sigma < 300);

  // Perturbed norms center on 1, biases on 0 (fewer samples: looser bounds).
  std::vector<float> norms, biases;
  for (const auto& layer : params.layers) {
    norms.insert(norms.end(), layer.input_norm.data.begin(), layer.input_norm.data.end());
    norms.insert(norms.end(), layer.post_attention_norm.data.begin(), layer.post_attention_norm.data.end());
    biases.insert(biases.end(), layer.o_bias.data.begin(), layer.o_bias.data.end());
    biases.insert(biases.end(), layer.q_bias.data.begin(), layer.q_bias.data.end());
  }
  const std::vector<double> n = moments(norms, 1.0), b = moments(biases, 0.0);
  CHECK(std::fabs(n[0]) < 0.01);
  CHECK(std::fabs(n[1] - 0.05) < 0.01);
  CHECK(std::fabs(b[0]) < 0.01);
  CHECK(std::fabs(b[1] - 0.05) < 0.01);

  options.std = -1.0f;
  expect_error([&] { fp8rl::model::random_model_params(config, 9, options); }, Status::invalid_argument, {"std"});
}

TEST_CASE("model params: a tensor's random values do not depend on the other tensors") {
  ModelConfig with_bias = qwen3_config();
  with_bias.family = ModelFamily::llama;
  with_bias.qk_norm = false;
  ModelConfig without = with_bias;
  without.attention_bias = false;
  const ModelParams a = fp8rl::model::random_model_params(with_bias, 5);
  const ModelParams b = fp8rl::model::random_model_params(without, 5);
  CHECK(a.layers[1].down_proj.data == b.layers[1].down_proj.data);
  CHECK(a.lm_head.data == b.lm_head.data);
}

TEST_CASE("half codec: every FP16 code round-trips and widens exactly") {
  for (uint32_t code = 0; code < 0x10000u; ++code) {
    const float x = fp8rl::model::half_decode(static_cast<uint16_t>(code));
    if ((code & 0x7C00u) == 0x7C00u && (code & 0x3FFu) != 0) {
      CHECK(std::isnan(x));
      CHECK((fp8rl::model::half_encode(x) & 0x7E00u) == 0x7E00u);
      continue;
    }
    // Independent value: sign * mantissa * 2^(exponent) from the fields.
    const int exponent = static_cast<int>((code >> 10) & 0x1Fu);
    const double mantissa = static_cast<double>(code & 0x3FFu);
    double expected = exponent == 0    ? std::ldexp(mantissa, -24)
                      : exponent == 31 ? std::numeric_limits<double>::infinity()
                                       : std::ldexp(1024.0 + mantissa, exponent - 25);
    if (code & 0x8000u) expected = -expected;
    if (static_cast<double>(x) != expected) FAIL_CHECK("code " << code << ": " << x << " vs " << expected);
    if (fp8rl::model::half_encode(x) != code) FAIL_CHECK("code " << code << " re-encodes differently");
  }
}

TEST_CASE("half codec: encoding rounds to nearest even at every midpoint") {
  // Between each pair of neighbouring positive codes (subnormals included),
  // the exact midpoint goes to the even code, and anything off it to the
  // nearer one. The midpoint and its neighbours are exact in float.
  for (uint16_t code = 0; code < 0x7BFFu; ++code) {
    const float low = fp8rl::model::half_decode(code), high = fp8rl::model::half_decode(code + 1);
    const float mid = (low + high) / 2;
    const uint16_t even = (code & 1u) ? static_cast<uint16_t>(code + 1) : code;
    if (fp8rl::model::half_encode(mid) != even) FAIL_CHECK("midpoint after " << code);
    if (fp8rl::model::half_encode(-mid) != (even | 0x8000u)) FAIL_CHECK("negative midpoint after " << code);
    if (fp8rl::model::half_encode(std::nextafter(mid, 0.0f)) != code) FAIL_CHECK("below midpoint after " << code);
    if (fp8rl::model::half_encode(std::nextafter(mid, 1e9f)) != code + 1) FAIL_CHECK("above midpoint after " << code);
  }
  // The top: 65504 is the largest; 65520 (the midpoint to 2^16) rounds to infinity.
  CHECK(fp8rl::model::half_encode(65519.996f) == 0x7BFFu);
  CHECK(fp8rl::model::half_encode(65520.0f) == 0x7C00u);
  CHECK(fp8rl::model::half_encode(-1e30f) == 0xFC00u);
  CHECK(fp8rl::model::half_encode(std::numeric_limits<float>::infinity()) == 0x7C00u);
  // The bottom: half the smallest subnormal is a tie to 0; just above it rounds up.
  CHECK(fp8rl::model::half_encode(0x1p-25f) == 0x0000u);
  CHECK(fp8rl::model::half_encode(std::nextafter(0x1p-25f, 1.0f)) == 0x0001u);
  CHECK(fp8rl::model::half_encode(1e-45f) == 0x0000u);
  CHECK(fp8rl::model::half_encode(-0.0f) == 0x8000u);
}
