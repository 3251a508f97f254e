// dist::MemoryReport -> fp8rl_memory_report, for the policy and trainer reports and the plan.
#pragma once

#include "core/dist/memory_plan.h"
#include "fp8rl/fp8rl.h"

namespace fp8rl::capi {

inline fp8rl_memory_report to_public(const dist::MemoryReport& m) {
  fp8rl_memory_report report{};
  report.struct_size = sizeof(report);
  report.master_weights = m.master_weights;
  report.compute_weights = m.compute_weights;
  report.gradients = m.gradients;
  report.optimizer_state = m.optimizer_state;
  report.backward_weights = m.backward_weights;
  report.kv_cache = m.kv_cache;
  return report;
}

}  // namespace fp8rl::capi
