// A 64-bit fingerprint of what a policy computes with (compute copies of the
// weights, attention scales, recipe): equal on every data-parallel rank after
// each step, which tests and hosts check to see the ranks generate alike.
#pragma once

#include <cstdint>

#include "core/policy/policy.h"

namespace fp8rl::policy {

// FNV-1a over the bytes, in a fixed order: the recipe's description, the
// attention scales, then every compute copy (embeddings, each layer's linear
// layers as BF16 or E4M3 codes and block scales, their biases and norms, the
// final norm, an untied head), downloaded from the backend.
uint64_t fingerprint(const Policy& policy);

}  // namespace fp8rl::policy
