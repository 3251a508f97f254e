// The optimizer's view of one parameter tensor: its FP32 master weights, the
// gradient of the same size, and whether weight decay applies to it. The
// optimizer, the gradient clipper and the accumulator work on a list of
// slots, so they do not depend on how a model lays out its tensors.
//
// Usage (one slot per tensor of core/model ModelParams, in for_each_tensor order):
//   std::vector<ParamSlot> slots;
//   for_each_tensor(params, [&](const std::string& name, const auto&, HostTensor& t) {
//     slots.push_back({t.data.data(), grads.at(name).data(), t.data.size(), is_matrix(name)});
//   });
#pragma once

#include <cstddef>
#include <vector>

namespace fp8rl::train {

struct ParamSlot {
  float* param = nullptr;       // [size] FP32 master weights, updated in place; not owned
  const float* grad = nullptr;  // [size] FP32 gradient; read only; not owned
  size_t size = 0;
  bool decay = true;  // apply weight decay (matrices: yes; norms, biases, often embeddings: no)
};

// A mutable FP32 array owned by someone else (optimizer state, gradient buffers).
struct FloatSpan {
  float* data = nullptr;
  size_t size = 0;
};

// Throws Error(invalid_argument) naming the slot when a slot has a null
// pointer with a non-zero size, or when slots.size() / a slot's size differs
// from the expected sizes (pass an empty `expected_sizes` to skip that check).
void check_param_slots(const std::vector<ParamSlot>& slots, const std::vector<size_t>& expected_sizes, const char* who);

}  // namespace fp8rl::train
