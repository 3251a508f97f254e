#include "recipe_convert.h"

#include <string>

#include "api_guard.h"
#include "enum_mapping.h"

namespace fp8rl::capi {

fp8rl_recipe default_recipe() { return to_public(policy::Recipe{}); }

policy::Recipe recipe_from(const fp8rl_recipe* given) {
  const fp8rl_recipe r = read_options(given, default_recipe(), "recipe");
  policy::Recipe recipe;
  recipe.linear = precision_from(r.linear, "recipe->linear");
  recipe.scale_format = scale_format_from(r.scale_format, std::string("recipe->scale_format"));
  recipe.kv_cache = precision_from(r.kv_cache, "recipe->kv_cache");
  recipe.attention = precision_from(r.attention, "recipe->attention");
  recipe.bf16_first_layers = r.bf16_first_layers;
  recipe.bf16_last_layers = r.bf16_last_layers;
  recipe.head = precision_from(r.head, "recipe->head");
  return recipe;
}

fp8rl_recipe to_public(const policy::Recipe& recipe) {
  fp8rl_recipe r{};
  r.struct_size = sizeof(r);
  r.linear = to_public(recipe.linear);
  r.scale_format = to_public(recipe.scale_format);
  r.kv_cache = to_public(recipe.kv_cache);
  r.attention = to_public(recipe.attention);
  r.bf16_first_layers = recipe.bf16_first_layers;
  r.bf16_last_layers = recipe.bf16_last_layers;
  r.head = to_public(recipe.head);
  return r;
}

}  // namespace fp8rl::capi
