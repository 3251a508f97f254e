// The Mixture-of-Experts operations on the GPU (kernels/backend.h), with the
// arithmetic of kernels/common/moe_routing_math.h: bit-identical to the CPU.
#pragma once

#include <cuda_runtime.h>

#include "../moe_ops.h"

namespace fp8rl::cuda {

// One thread per (token, expert) for the logits, then one per token for the
// softmax and top-k (routing is a small part of an MoE layer's work).
void launch_moe_route(const MoeRouteArgs& args, cudaStream_t stream);
// One thread per output element.
void launch_moe_combine(const MoeCombineArgs& args, cudaStream_t stream);
// One thread per token for dlogits, then one per element of dx and of drouter.
void launch_moe_route_backward(const MoeRouteBackwardArgs& args, cudaStream_t stream);
// One thread per (slot, h) for dexpert_out, then one per slot for dweights.
void launch_moe_combine_backward(const MoeCombineBackwardArgs& args, cudaStream_t stream);

}  // namespace fp8rl::cuda
