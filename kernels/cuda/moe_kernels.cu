#include <algorithm>

#include "../common/moe_routing_math.h"
#include "../common/quant_layout.h"  // ceil_div
#include "cuda_check.h"
#include "moe_kernels.h"

namespace fp8rl::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxGrid = 1 << 16;  // CTAs per launch; the kernels loop over the rest

unsigned grid_for(int64_t count) {
  return static_cast<unsigned>(std::clamp<int64_t>(ceil_div(count, kThreads), 1, kMaxGrid));
}

__device__ __forceinline__ int64_t first_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__global__ void router_logits_kernel(MoeRouteArgs a) {
  for (int64_t i = first_index(); i < a.tokens * a.experts; i += stride()) {
    const int64_t t = i / a.experts, e = i % a.experts;
    a.logits[i] = router_logit(a.x + t * a.hidden, a.router + e * a.hidden, a.hidden);
  }
}

__global__ void route_tokens_kernel(MoeRouteArgs a) {
  for (int64_t t = first_index(); t < a.tokens; t += stride()) {
    route_token(a.logits + t * a.experts, a.experts, a.top_k, a.normalize, a.chosen + t * a.top_k,
                a.weights + t * a.top_k);
    if (a.replayed)
      replayed_gates(a.logits + t * a.experts, a.experts, a.top_k, a.normalize, a.replayed + t * a.top_k,
                     a.weights + t * a.top_k);
  }
}

__global__ void combine_kernel(MoeCombineArgs a) {
  for (int64_t i = first_index(); i < a.tokens * a.hidden; i += stride()) {
    const int64_t t = i / a.hidden, h = i % a.hidden;
    a.out[i] = combine_value(a.expert_out, a.slot_rows + t * a.top_k, a.weights + t * a.top_k, a.top_k, a.hidden, h);
  }
}

__global__ void route_backward_kernel(MoeRouteBackwardArgs a) {
  for (int64_t t = first_index(); t < a.tokens; t += stride()) {
    const int64_t slots = t * a.top_k;
    route_backward_token(a.logits + t * a.experts, a.experts, a.top_k, a.normalize, a.used + slots, a.weights + slots,
                         a.dweights + slots, a.aux_grad, a.dlogits + t * a.experts);
  }
}

__global__ void router_input_grad_kernel(MoeRouteBackwardArgs a) {
  for (int64_t i = first_index(); i < a.tokens * a.hidden; i += stride()) {
    const int64_t t = i / a.hidden, h = i % a.hidden;
    a.dx[i] = add_rn(a.dx[i], router_input_grad(a.dlogits + t * a.experts, a.router, a.experts, a.hidden, h));
  }
}

__global__ void router_weight_grad_kernel(MoeRouteBackwardArgs a) {
  for (int64_t i = first_index(); i < a.experts * a.hidden; i += stride()) {
    const int64_t e = i / a.hidden, h = i % a.hidden;
    a.drouter[i] = add_rn(a.drouter[i], router_weight_grad(a.dlogits, a.x, a.tokens, a.experts, a.hidden, e, h));
  }
}

__global__ void combine_backward_rows_kernel(MoeCombineBackwardArgs a) {
  for (int64_t i = first_index(); i < a.tokens * a.top_k * a.hidden; i += stride()) {
    const int64_t slot = i / a.hidden, h = i % a.hidden, t = slot / a.top_k;
    a.dexpert_out[a.slot_rows[slot] * a.hidden + h] = mul_rn(a.weights[slot], a.dout[t * a.hidden + h]);
  }
}

__global__ void combine_backward_weights_kernel(MoeCombineBackwardArgs a) {
  for (int64_t slot = first_index(); slot < a.tokens * a.top_k; slot += stride()) {
    const int64_t t = slot / a.top_k;
    a.dweights[slot] = combine_weight_grad(a.dout + t * a.hidden, a.expert_out + a.slot_rows[slot] * a.hidden, a.hidden);
  }
}

}  // namespace

void launch_moe_route(const MoeRouteArgs& args, cudaStream_t stream) {
  router_logits_kernel<<<grid_for(args.tokens * args.experts), kThreads, 0, stream>>>(args);
  check_launch("moe router logits kernel launch");
  route_tokens_kernel<<<grid_for(args.tokens), kThreads, 0, stream>>>(args);
  check_launch("moe routing kernel launch");
}

void launch_moe_combine(const MoeCombineArgs& args, cudaStream_t stream) {
  combine_kernel<<<grid_for(args.tokens * args.hidden), kThreads, 0, stream>>>(args);
  check_launch("moe combine kernel launch");
}

void launch_moe_route_backward(const MoeRouteBackwardArgs& args, cudaStream_t stream) {
  route_backward_kernel<<<grid_for(args.tokens), kThreads, 0, stream>>>(args);
  check_launch("moe routing backward kernel launch");
  router_input_grad_kernel<<<grid_for(args.tokens * args.hidden), kThreads, 0, stream>>>(args);
  check_launch("moe router input gradient kernel launch");
  router_weight_grad_kernel<<<grid_for(args.experts * args.hidden), kThreads, 0, stream>>>(args);
  check_launch("moe router weight gradient kernel launch");
}

void launch_moe_combine_backward(const MoeCombineBackwardArgs& args, cudaStream_t stream) {
  combine_backward_rows_kernel<<<grid_for(args.tokens * args.top_k * args.hidden), kThreads, 0, stream>>>(args);
  check_launch("moe combine backward kernel launch");
  combine_backward_weights_kernel<<<grid_for(args.tokens * args.top_k), kThreads, 0, stream>>>(args);
  check_launch("moe combine weight gradient kernel launch");
}

}  // namespace fp8rl::cuda
