// Argument checks of the Mixture-of-Experts operations (moe_ops.h), shared by
// every backend so that they refuse the same calls with the same messages.
#pragma once

#include <string>

#include "moe_ops.h"
#include "transformer_checks.h"

namespace fp8rl {

inline bool check_moe_route_args(const MoeRouteArgs& a) {
  require(a.experts > 0, "moe_route: experts must be positive, got " + std::to_string(a.experts));
  require(a.top_k >= 1 && a.top_k <= a.experts,
          "moe_route: top_k must be in [1, experts], got " + std::to_string(a.top_k));
  require_elements(a.experts, a.hidden > 0 ? a.hidden : 1, "moe_route (router)");
  if (!check_rows("moe_route", a.tokens, "tokens", a.hidden, "hidden")) return false;
  require_elements(a.tokens, a.experts, "moe_route (logits)");
  require_pointers(a.x && a.router && a.logits && a.chosen && a.weights, "moe_route");
  return true;
}

inline bool check_moe_combine_args(const MoeCombineArgs& a) {
  require(a.top_k > 0, "moe_combine: top_k must be positive, got " + std::to_string(a.top_k));
  require(a.expert_rows >= 0, "moe_combine: expert_rows must be non-negative");
  require_elements(a.expert_rows > 0 ? a.expert_rows : 1, a.hidden > 0 ? a.hidden : 1, "moe_combine (expert_out)");
  if (!check_rows("moe_combine", a.tokens, "tokens", a.hidden, "hidden")) return false;
  require_elements(a.tokens, a.top_k, "moe_combine (slots)");
  require_pointers(a.expert_out && a.slot_rows && a.weights && a.out, "moe_combine");
  return true;
}

inline bool check_moe_route_backward_args(const MoeRouteBackwardArgs& a) {
  require(a.experts > 0, "moe_route_backward: experts must be positive, got " + std::to_string(a.experts));
  require(a.top_k >= 1 && a.top_k <= a.experts,
          "moe_route_backward: top_k must be in [1, experts], got " + std::to_string(a.top_k));
  require_elements(a.experts, a.hidden > 0 ? a.hidden : 1, "moe_route_backward (router)");
  if (!check_rows("moe_route_backward", a.tokens, "tokens", a.hidden, "hidden")) return false;
  require_elements(a.tokens, a.experts, "moe_route_backward (logits)");
  require_pointers(a.x && a.router && a.logits && a.used && a.weights && a.dweights && a.dlogits && a.dx && a.drouter,
                   "moe_route_backward");
  return true;
}

inline bool check_moe_combine_backward_args(const MoeCombineBackwardArgs& a) {
  require(a.top_k > 0, "moe_combine_backward: top_k must be positive, got " + std::to_string(a.top_k));
  require(a.expert_rows >= 0, "moe_combine_backward: expert_rows must be non-negative");
  require_elements(a.expert_rows > 0 ? a.expert_rows : 1, a.hidden > 0 ? a.hidden : 1,
                   "moe_combine_backward (expert_out)");
  if (!check_rows("moe_combine_backward", a.tokens, "tokens", a.hidden, "hidden")) return false;
  require_elements(a.tokens, a.top_k, "moe_combine_backward (slots)");
  require_pointers(a.dout && a.expert_out && a.slot_rows && a.weights && a.dexpert_out && a.dweights,
                   "moe_combine_backward");
  return true;
}

}  // namespace fp8rl
