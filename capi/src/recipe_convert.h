// fp8rl_recipe <-> policy::Recipe, for every function that takes or returns one.
#pragma once

#include "core/policy/recipe.h"
#include "fp8rl/fp8rl.h"

namespace fp8rl::capi {

// The public defaults: the core's default recipe (BF16 throughout).
fp8rl_recipe default_recipe();

// Reads a caller's struct (honouring struct_size; NULL is an error naming
// "recipe") and checks its enums; the core validates the rest.
policy::Recipe recipe_from(const fp8rl_recipe* given);

fp8rl_recipe to_public(const policy::Recipe& recipe);

}  // namespace fp8rl::capi
