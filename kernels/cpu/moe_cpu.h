// The Mixture-of-Experts operations on the CPU (kernels/backend.h), each over
// a range of tokens so the backend can spread them over threads. The
// arithmetic is kernels/common/moe_routing_math.h's.
#pragma once

#include "../moe_ops.h"

namespace fp8rl::cpu {

// Tokens [begin, end): logits, chosen experts and gate weights.
void moe_route_tokens(const MoeRouteArgs& args, int64_t begin, int64_t end);
// Tokens [begin, end) of out.
void moe_combine_tokens(const MoeCombineArgs& args, int64_t begin, int64_t end);
// Tokens [begin, end) of dlogits, then of dx.
void moe_route_backward_tokens(const MoeRouteBackwardArgs& args, int64_t begin, int64_t end);
// Experts [begin, end) of drouter (each a reduction over all tokens).
void moe_router_weight_grad_experts(const MoeRouteBackwardArgs& args, int64_t begin, int64_t end);
// Tokens [begin, end): their slots' rows of dexpert_out and dweights.
void moe_combine_backward_tokens(const MoeCombineBackwardArgs& args, int64_t begin, int64_t end);

}  // namespace fp8rl::cpu
