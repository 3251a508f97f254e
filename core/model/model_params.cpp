// The tensor list of a ModelConfig (names, shapes, order) and the checks that
// a ModelParams matches it.
#include "core/model/model_params.h"

#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>

#include "core/model/layer_parts.h"
#include "core/model/model_params_detail.h"
#include "kernels/error.h"

namespace fp8rl::model {
namespace detail {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

bool is_shard_file_name(const std::string& name) {
  // model-DDDDD-of-DDDDD.safetensors
  static constexpr std::string_view kPrefix = "model-", kMiddle = "-of-", kSuffix = ".safetensors";
  if (name.size() != kPrefix.size() + 5 + kMiddle.size() + 5 + kSuffix.size()) return false;
  const std::string_view view(name);
  if (view.substr(0, 6) != kPrefix || view.substr(11, 4) != kMiddle || view.substr(20) != kSuffix) return false;
  int index = 0, count = 0;
  for (size_t i = 0; i < 5; ++i) {
    const char a = name[6 + i], b = name[15 + i];
    if (a < '0' || a > '9' || b < '0' || b > '9') return false;
    index = index * 10 + (a - '0');
    count = count * 10 + (b - '0');
  }
  return index >= 1 && index <= count;
}

}  // namespace detail

using detail::shape_string;

void size_layers(ModelParams& params) {
  const ModelConfig& c = params.config;
  params.layers.resize(static_cast<size_t>(c.num_layers));
  for (size_t i = 0; i < params.layers.size(); ++i) {
    const bool sparse = is_sparse_layer(c, static_cast<int64_t>(i));
    params.layers[i].experts.resize(sparse ? static_cast<size_t>(c.moe.num_experts) : 0);
  }
}

void for_each_tensor(ModelParams& params, const TensorVisitor& visit) {
  const ModelConfig& c = params.config;
  validate(c);
  require(params.layers.size() == static_cast<size_t>(c.num_layers),
          "model params: " + std::to_string(params.layers.size()) + " layers, config calls for " +
              std::to_string(c.num_layers));
  const int64_t hidden = c.hidden_size;

  visit("model.embed_tokens.weight", {c.vocab_size, hidden}, params.embed_tokens);
  for (size_t i = 0; i < params.layers.size(); ++i) {
    LayerParams& layer = params.layers[i];
    const std::string prefix = "model.layers." + std::to_string(i) + ".";
    for (const LayerPart& part : kLayerParts) {
      if (!part.is_linear) {
        const NormPart& norm = part.norm;
        if (norm.present(c)) visit(prefix + norm.name + ".weight", {norm.size(c)}, layer.*norm.weight);
        continue;
      }
      const LinearPart& linear = part.linear;
      if (!present(linear, c, static_cast<int64_t>(i))) continue;
      const int64_t out = linear.out_features(c);
      visit(prefix + linear.name + ".weight", {out, linear.in_features(c)}, layer.*linear.weight);
      if (has_bias(linear, c)) visit(prefix + linear.name + ".bias", {out}, layer.*linear.bias);
    }
    const size_t experts = is_sparse_layer(c, static_cast<int64_t>(i)) ? static_cast<size_t>(c.moe.num_experts) : 0;
    require(layer.experts.size() == experts, "model params: " + prefix + "mlp.experts holds " +
                                                 std::to_string(layer.experts.size()) +
                                                 " experts, the config calls for " + std::to_string(experts));
    for (size_t e = 0; e < layer.experts.size(); ++e) {
      for (const ExpertPart& part : kExpertParts) {
        visit(prefix + expert_part_name(static_cast<int64_t>(e), part) + ".weight",
              {part.out_features(c), part.in_features(c)}, layer.experts[e].*part.weight);
      }
    }
  }
  visit("model.norm.weight", {hidden}, params.final_norm);
  if (!c.tie_word_embeddings) visit("lm_head.weight", {c.vocab_size, hidden}, params.lm_head);
}

int64_t tensor_count(const ModelConfig& c) {
  int64_t count = 1;  // embeddings
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    for (const LayerPart& part : kLayerParts) {
      if (!part.is_linear) {
        count += part.norm.present(c) ? 1 : 0;
      } else if (present(part.linear, c, layer)) {
        count += has_bias(part.linear, c) ? 2 : 1;
      }
    }
    if (is_sparse_layer(c, layer)) count += c.moe.num_experts * static_cast<int64_t>(kExpertLinearCount);
  }
  return count + 1 + (c.tie_word_embeddings ? 0 : 1);  // final norm, head
}

void check_files_can_hold(const ModelConfig& config, uint64_t tensors, uint64_t bytes, uint64_t min_bytes_per_value,
                          const std::string& where) {
  const auto needed_tensors = static_cast<uint64_t>(tensor_count(config));
  if (tensors < needed_tensors) {
    fail(Status::corrupt_data, where + ": the config calls for " + std::to_string(needed_tensors) +
                                   " tensors (num_hidden_layers " + std::to_string(config.num_layers) +
                                   "), the files hold " + std::to_string(tensors));
  }
  // parameter_count < 2^58 (ModelConfigLimits), so the product fits.
  const uint64_t needed_bytes = static_cast<uint64_t>(parameter_count(config)) * min_bytes_per_value;
  if (bytes < needed_bytes) {
    fail(Status::corrupt_data, where + ": the config calls for " + std::to_string(parameter_count(config)) +
                                   " weights, at least " + std::to_string(needed_bytes) + " bytes, the files hold " +
                                   std::to_string(bytes));
  }
}

namespace {

// The tensors a config does not call for must be empty, so that a caller who
// fills lm_head of a tied model (or biases of a bias-free one) hears about it
// instead of having the weights silently ignored.
void check_unused_empty(const ModelParams& params) {
  const ModelConfig& c = params.config;
  const auto require_empty = [](const HostTensor& tensor, const std::string& name, const char* why) {
    require(tensor.empty() && tensor.shape.empty(), "model params: " + name + " is set but " + why);
  };
  if (c.tie_word_embeddings) require_empty(params.lm_head, "lm_head.weight", "tie_word_embeddings is true");
  for (size_t i = 0; i < params.layers.size(); ++i) {
    const LayerParams& layer = params.layers[i];
    const std::string prefix = "model.layers." + std::to_string(i) + ".";
    for (const LayerPart& part : kLayerParts) {
      if (!part.is_linear && !part.norm.present(c)) {
        require_empty(layer.*part.norm.weight, prefix + part.norm.name + ".weight", "the config has none");
      }
      if (part.is_linear && !present(part.linear, c, static_cast<int64_t>(i))) {
        require_empty(layer.*part.linear.weight, prefix + part.linear.name + ".weight",
                      is_sparse_layer(c, static_cast<int64_t>(i)) ? "the layer is sparse" : "the layer is dense");
      }
      if (part.is_linear && part.linear.bias != nullptr && !has_bias(part.linear, c)) {
        require_empty(layer.*part.linear.bias, prefix + part.linear.name + ".bias", "the config has none");
      }
    }
  }
}

}  // namespace

void check_model_params(const ModelParams& params) {
  // for_each_tensor hands out mutable tensors for loaders; this visitor only reads.
  for_each_tensor(const_cast<ModelParams&>(params), [](const std::string& name, const std::vector<int64_t>& shape,
                                                       HostTensor& tensor) {
    require(tensor.shape == shape,
            "model params: " + name + " has shape " + shape_string(tensor.shape) + ", expected " + shape_string(shape));
    int64_t count = 1;
    for (int64_t dim : shape) count *= dim;  // validate() bounds the products
    require(tensor.data.size() == static_cast<size_t>(count),
            "model params: " + name + " holds " + std::to_string(tensor.data.size()) + " values, shape " +
                shape_string(shape) + " needs " + std::to_string(count));
    for (size_t i = 0; i < tensor.data.size(); ++i) {
      if (!std::isfinite(tensor.data[i])) {
        fail(Status::non_finite, "model params: " + name + " element " + std::to_string(i) + " is " +
                                     (std::isnan(tensor.data[i]) ? "NaN" : "infinite"));
      }
    }
  });
  check_unused_empty(params);
}

}  // namespace fp8rl::model
