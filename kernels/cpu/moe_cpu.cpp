#include "moe_cpu.h"

#include "../common/moe_routing_math.h"

namespace fp8rl::cpu {

void moe_route_tokens(const MoeRouteArgs& a, int64_t begin, int64_t end) {
  for (int64_t t = begin; t < end; ++t) {
    const float* x = a.x + t * a.hidden;
    float* logits = a.logits + t * a.experts;  // [experts]
    for (int64_t e = 0; e < a.experts; ++e) logits[e] = router_logit(x, a.router + e * a.hidden, a.hidden);
    route_token(logits, a.experts, a.top_k, a.normalize, a.chosen + t * a.top_k, a.weights + t * a.top_k);
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

}  // namespace fp8rl::cpu
