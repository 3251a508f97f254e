#include "core/policy/policy.h"

#include <cmath>
#include <string>

#include "core/policy/compiled_model.h"
#include "core/policy/model_runner.h"

namespace fp8rl::policy {
namespace {

AttentionScales unit_scales(int64_t num_layers) {
  const std::vector<float> ones(static_cast<size_t>(num_layers), 1.0f);
  return AttentionScales{ones, ones, ones};
}

void check_scales(const std::vector<float>& scales, const char* which, int64_t num_layers) {
  require(static_cast<int64_t>(scales.size()) == num_layers,
          std::string("attention scales: ") + which + " has " + std::to_string(scales.size()) +
              " values; the model has " + std::to_string(num_layers) + " layers");
  for (size_t layer = 0; layer < scales.size(); ++layer) {
    const float s = scales[layer];
    require(std::isnormal(s) && s > 0.0f, std::string("attention scales: ") + which + " scale of layer " +
                                              std::to_string(layer) + " is " + std::to_string(s) +
                                              "; scales must be finite, normal and > 0");
  }
}

void require_same_config(const model::ModelConfig& have, const model::ModelConfig& given) {
  const std::string a = io::write_json(model::model_config_to_json(have));
  const std::string b = io::write_json(model::model_config_to_json(given));
  require(a == b, "the weights are for another model: config " + b + ", the policy's " + a);
}

}  // namespace

void validate_attention_scales(const AttentionScales& scales, int64_t num_layers) {
  check_scales(scales.q, "q", num_layers);
  check_scales(scales.k, "k", num_layers);
  check_scales(scales.v, "v", num_layers);
}

Policy::Policy(Context& context, model::ModelParams params, const Recipe& recipe)
    : context_(context), params_(std::move(params)), recipe_(recipe) {
  model::check_model_params(params_);
  validate_recipe(recipe_);
  scales_ = unit_scales(params_.config.num_layers);
  compiled_ = std::make_unique<CompiledModel>(context_.backend(), params_, recipe_);
  runner_ = std::make_unique<ModelRunner>(context_.backend(), params_.config);
}

Policy::~Policy() = default;

const model::ModelParams& Policy::params() const {
  sync_host();
  return params_;
}

void Policy::sync_host() const {
  if (!host_stale_) return;
  if (masters_ == nullptr)
    fail(Status::distributed,
         "the policy's master weights are partial: a data-parallel trainer was destroyed before they were gathered "
         "(fp8rl_trainer_gather_weights); its compute weights still generate, and loading or copying weights into it "
         "makes it whole again");
  masters_->download(params_);
  host_stale_ = false;
}

void Policy::attach_masters(DeviceMasters* masters) {
  if (masters == masters_) return;
  sync_host();
  masters->upload(params_);
  masters_ = masters;
}

void Policy::detach_masters(const DeviceMasters* masters) {
  if (masters != masters_) return;
  if (masters->complete()) sync_host();  // else the host copy stays stale, with nothing to bring it up to date
  masters_ = nullptr;
}

void Policy::set_recipe(const Recipe& recipe) {
  validate_recipe(recipe);
  auto compiled = std::make_unique<CompiledModel>(context_.backend(), params(), recipe);
  compiled_ = std::move(compiled);
  recipe_ = recipe;
}

void Policy::set_attention_scales(const AttentionScales& scales) {
  validate_attention_scales(scales, params_.config.num_layers);
  scales_ = scales;
}

void Policy::replace_state(model::ModelParams params, const Recipe& recipe, const AttentionScales& scales) {
  require_same_config(params_.config, params.config);
  model::check_model_params(params);
  validate_recipe(recipe);
  validate_attention_scales(scales, params.config.num_layers);
  auto compiled = std::make_unique<CompiledModel>(context_.backend(), params, recipe);
  params_ = std::move(params);
  host_stale_ = false;
  if (masters_ != nullptr) masters_->upload(params_);
  recipe_ = recipe;
  scales_ = scales;
  compiled_ = std::move(compiled);
}

void Policy::copy_weights_from(const Policy& source) {
  require(&source != this, "copy_weights_from: source and destination are the same policy");
  require_same_config(params_.config, source.params_.config);
  params_ = source.params();
  host_stale_ = false;
  if (masters_ != nullptr) masters_->upload(params_);
  scales_ = source.scales_;
  refit();
}

void Policy::refit() {
  if (masters_ != nullptr) return compiled_->refit(params_, masters_);
  sync_host();
  model::check_model_params(params_);
  compiled_->refit(params_);
}

}  // namespace fp8rl::policy
