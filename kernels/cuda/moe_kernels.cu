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
  for (int64_t t = first_index(); t < a.tokens; t += stride())
    route_token(a.logits + t * a.experts, a.experts, a.top_k, a.normalize, a.chosen + t * a.top_k,
                a.weights + t * a.top_k);
}

__global__ void combine_kernel(MoeCombineArgs a) {
  for (int64_t i = first_index(); i < a.tokens * a.hidden; i += stride()) {
    const int64_t t = i / a.hidden, h = i % a.hidden;
    a.out[i] = combine_value(a.expert_out, a.slot_rows + t * a.top_k, a.weights + t * a.top_k, a.top_k, a.hidden, h);
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

}  // namespace fp8rl::cuda
