#include "moe_cpu.h"

#include "../common/moe_routing_math.h"

namespace fp8rl::cpu {

void moe_route_tokens(const MoeRouteArgs& a, int64_t begin, int64_t end) {
  for (int64_t t = begin; t < end; ++t) {
    const float* x = a.x + t * a.hidden;
    float* logits = a.logits + t * a.experts;  // [experts]
    for (int64_t e = 0; e < a.experts; ++e) logits[e] = router_logit(x, a.router + e * a.hidden, a.hidden);
    route_token(logits, a.experts, a.top_k, a.normalize, a.chosen + t * a.top_k, a.weights + t * a.top_k);
    if (a.replayed)
      replayed_gates(logits, a.experts, a.top_k, a.normalize, a.replayed + t * a.top_k, a.weights + t * a.top_k);
  }
}

void moe_combine_tokens(const MoeCombineArgs& a, int64_t begin, int64_t end) {
  for (int64_t t = begin; t < end; ++t) {
    const int64_t* slots = a.slot_rows + t * a.top_k;
    const float* weights = a.weights + t * a.top_k;
    float* out = a.out + t * a.hidden;
    for (int64_t h = 0; h < a.hidden; ++h) out[h] = combine_value(a.expert_out, slots, weights, a.top_k, a.hidden, h);
  }
}

void moe_route_backward_tokens(const MoeRouteBackwardArgs& a, int64_t begin, int64_t end) {
  for (int64_t t = begin; t < end; ++t) {
    float* dlogits = a.dlogits + t * a.experts;  // [experts]
    const int64_t slots = t * a.top_k;
    route_backward_token(a.logits + t * a.experts, a.experts, a.top_k, a.normalize, a.used + slots,
                         a.weights + slots, a.dweights + slots, a.aux_grad, dlogits);
    float* dx = a.dx + t * a.hidden;
    for (int64_t h = 0; h < a.hidden; ++h)
      dx[h] = add_rn(dx[h], router_input_grad(dlogits, a.router, a.experts, a.hidden, h));
  }
}

void moe_router_weight_grad_experts(const MoeRouteBackwardArgs& a, int64_t begin, int64_t end) {
  for (int64_t e = begin; e < end; ++e) {
    float* drouter = a.drouter + e * a.hidden;
    for (int64_t h = 0; h < a.hidden; ++h)
      drouter[h] = add_rn(drouter[h], router_weight_grad(a.dlogits, a.x, a.tokens, a.experts, a.hidden, e, h));
  }
}

void moe_combine_backward_tokens(const MoeCombineBackwardArgs& a, int64_t begin, int64_t end) {
  for (int64_t t = begin; t < end; ++t) {
    const float* dout = a.dout + t * a.hidden;
    for (int64_t j = 0; j < a.top_k; ++j) {
      const int64_t slot = t * a.top_k + j, row = a.slot_rows[slot];
      a.dweights[slot] = combine_weight_grad(dout, a.expert_out + row * a.hidden, a.hidden);
      float* dexpert = a.dexpert_out + row * a.hidden;
      for (int64_t h = 0; h < a.hidden; ++h) dexpert[h] = mul_rn(a.weights[slot], dout[h]);
    }
  }
}

}  // namespace fp8rl::cpu
