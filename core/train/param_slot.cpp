#include "core/train/param_slot.h"

#include <string>

#include "kernels/error.h"

namespace fp8rl::train {

void check_param_slots(const std::vector<ParamSlot>& slots, const std::vector<size_t>& expected_sizes,
                       const char* who) {
  const std::string prefix = std::string(who) + ": ";
  if (!expected_sizes.empty()) {
    require(slots.size() == expected_sizes.size(), prefix + "got " + std::to_string(slots.size()) +
                                                       " parameter slots, expected " +
                                                       std::to_string(expected_sizes.size()));
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    const ParamSlot& s = slots[i];
    if (!expected_sizes.empty()) {
      require(s.size == expected_sizes[i], prefix + "slot " + std::to_string(i) + " has " + std::to_string(s.size) +
                                               " elements, expected " + std::to_string(expected_sizes[i]));
    }
    require(s.size == 0 || (s.param != nullptr && s.grad != nullptr),
            prefix + "slot " + std::to_string(i) + " has a null param or grad pointer");
  }
}

}  // namespace fp8rl::train
